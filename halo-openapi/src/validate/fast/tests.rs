use super::*;
use serde_json::{Map, Value, json};

/// The fast check agrees with JSON Schema wherever it answers.
fn agree(schema: &Value, instances: &[Value]) -> Vec<bool> {
    let fast = Fast::compile(schema, true).expect("a fast schema");
    let full = jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .unwrap();
    instances
        .iter()
        .map(|instance| {
            let accepted = fast.accepts(&serde_json::to_vec(instance).unwrap());
            if accepted {
                assert!(
                    full.is_valid(instance),
                    "{instance} accepted against {schema}"
                );
            }
            accepted
        })
        .collect()
}

#[test]
fn an_ordinary_object_is_checked_while_reading() {
    let schema = json!({
        "type": "object",
        "required": ["title", "stars"],
        "properties": {
            "title": {"type": "string", "minLength": 1, "maxLength": 5},
            "stars": {"type": "integer", "minimum": 1, "maximum": 5, "format": "int32"},
            "price": {"type": ["number", "null"], "exclusiveMinimum": 0},
            "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
            "email": {"type": "string", "format": "email"},
        },
        "additionalProperties": false
    });
    let verdicts = agree(
        &schema,
        &[
            json!({"title": "Dune", "stars": 5}),
            json!({"title": "Dune", "stars": 5, "price": null, "tags": ["a", "b"]}),
            json!({"title": "Dune", "stars": 5, "price": 0.5, "email": "a@b.example"}),
            json!({"title": "Dune"}),
            json!({"title": "", "stars": 5}),
            json!({"title": "Dune Messiah", "stars": 5}),
            json!({"title": "Dune", "stars": 6}),
            json!({"title": "Dune", "stars": 2.5}),
            json!({"title": "Dune", "stars": 5, "price": 0}),
            json!({"title": "Dune", "stars": 5, "tags": ["a", "b", "c"]}),
            json!({"title": "Dune", "stars": 5, "tags": [1]}),
            json!({"title": "Dune", "stars": 5, "email": "nope"}),
            json!({"title": "Dune", "stars": 5, "other": 1}),
            json!(["title"]),
        ],
    );
    assert_eq!(
        verdicts,
        [
            true, true, true, false, false, false, false, false, false, false, false, false, false,
            false
        ]
    );
}

#[test]
fn unsupported_parts_are_delegated_and_still_checked() {
    let schema = json!({
        "type": "object",
        "properties": {
            "genre": {"enum": ["sf", "poetry"]},
            "author": {"$ref": "#/$defs/Author"},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
        },
        "$defs": {"Author": {"type": "object", "required": ["name"]}}
    });
    let verdicts = agree(
        &schema,
        &[
            json!({"genre": "sf", "author": {"name": "Herbert"}, "code": "ABC"}),
            json!({"genre": "crime"}),
            json!({"author": {}}),
            json!({"code": "abc"}),
        ],
    );
    assert_eq!(verdicts, [true, false, false, false]);
}

#[test]
fn what_cannot_be_told_exactly_is_left_to_the_full_check() {
    let fast = Fast::compile(
        &json!({"type": "object", "properties": {"n": {"type": "integer", "maximum": 10}}}),
        true,
    )
    .unwrap();
    // A repeated name, a float integer, malformed JSON, trailing bytes.
    for body in [
        &br#"{"n": 1, "n": 2}"#[..],
        br#"{"n": 1.0}"#,
        br#"{"n": 1"#,
        br#"{"n": 1} x"#,
    ] {
        assert!(!fast.accepts(body), "{}", String::from_utf8_lossy(body));
    }
    let huge = Fast::compile(&json!({"type": "number", "maximum": 1.5}), true).unwrap();
    assert!(!huge.accepts(b"18446744073709551615"));
    assert!(huge.accepts(b"1"));
}

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Random(u64);

impl Random {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n
    }

    fn pick<T: Clone>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())].clone()
    }

    fn number(&mut self) -> Value {
        self.pick(&[
            json!(0),
            json!(1),
            json!(-3),
            json!(5),
            json!(2.5),
            json!(1.0),
            json!(-0.0),
            json!(9_007_199_254_740_993_u64),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1e300),
        ])
    }

    fn schema(&mut self, depth: u32) -> Value {
        if depth == 0 || self.below(6) == 0 {
            return self.pick(&[
                json!(true),
                json!(false),
                json!({}),
                json!({"type": "string"}),
            ]);
        }
        let mut schema = Map::new();
        for _ in 0..=self.below(4) {
            let (keyword, value) = match self.below(16) {
                0 => (
                    "type",
                    self.pick(&[
                        json!("object"),
                        json!("array"),
                        json!("string"),
                        json!("integer"),
                        json!("number"),
                        json!("boolean"),
                        json!("null"),
                        json!(["string", "null"]),
                        json!(["integer", "string"]),
                    ]),
                ),
                1 => ("minLength", json!(self.below(4))),
                2 => ("maxLength", json!(self.below(6))),
                3 => ("minimum", self.number()),
                4 => ("maximum", self.number()),
                5 => ("exclusiveMinimum", self.number()),
                6 => ("exclusiveMaximum", self.number()),
                7 => ("items", self.schema(depth - 1)),
                8 => ("minItems", json!(self.below(3))),
                9 => ("maxItems", json!(self.below(3))),
                10 => {
                    let mut properties = Map::new();
                    for name in ["a", "b", "c"] {
                        if self.below(2) == 0 {
                            properties.insert(name.into(), self.schema(depth - 1));
                        }
                    }
                    ("properties", Value::Object(properties))
                }
                11 => (
                    "required",
                    self.pick(&[json!(["a"]), json!(["b", "d"]), json!([])]),
                ),
                12 => ("additionalProperties", self.schema(depth - 1)),
                13 => ("enum", self.pick(&[json!(["x", 1]), json!([null, true])])),
                14 => (
                    "format",
                    self.pick(&[json!("email"), json!("date"), json!("int32")]),
                ),
                _ => ("pattern", self.pick(&[json!("^a"), json!("[0-9]$")])),
            };
            schema.insert(keyword.into(), value);
        }
        Value::Object(schema)
    }

    fn instance(&mut self, depth: u32) -> Value {
        match self.below(if depth == 0 { 4 } else { 6 }) {
            0 => self.number(),
            1 => self.pick(&[
                json!(""),
                json!("a"),
                json!("ab9"),
                json!("héllo"),
                json!("x"),
                json!("ada@example.com"),
                json!("2024-02-30"),
                json!("2024-02-28"),
            ]),
            2 => self.pick(&[json!(null), json!(true), json!(false)]),
            3 => json!(1),
            4 => Value::Array(
                (0..self.below(4))
                    .map(|_| self.instance(depth - 1))
                    .collect(),
            ),
            _ => {
                let mut object = Map::new();
                for name in ["a", "b", "c", "d"] {
                    if self.below(2) == 0 {
                        object.insert(name.into(), self.instance(depth - 1));
                    }
                }
                Value::Object(object)
            }
        }
    }
}

#[test]
fn never_accepts_what_json_schema_refuses() {
    let mut random = Random(0x9e37_79b9_7f4a_7c15);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..3_000 {
        let schema = random.schema(3);
        let Some(fast) = Fast::compile(&schema, true) else {
            continue;
        };
        let full = jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .unwrap();
        for _ in 0..20 {
            let instance = random.instance(3);
            let valid = full.is_valid(&instance);
            if fast.accepts(&serde_json::to_vec(&instance).unwrap()) {
                assert!(valid, "{instance} accepted against {schema}");
                accepted += 1;
            } else if valid {
                refused += 1;
            }
        }
    }
    // The fast check answers for most valid instances, not just a few.
    assert!(
        accepted > 5 * refused,
        "accepted {accepted}, left {refused} valid ones"
    );
}

#[test]
fn document_wide_keywords_and_delegated_roots_take_the_full_check() {
    for schema in [
        json!({"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}),
        json!({"type": "object", "properties": {"a": {"$ref": "#"}}}),
        json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
    ] {
        assert!(Fast::compile(&schema, true).is_none(), "{schema}");
    }
}
