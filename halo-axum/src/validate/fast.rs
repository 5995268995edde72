//! A check of a JSON body against its schema that reads the bytes once and builds nothing.
//!
//! The full check parses the body into a [`Value`] and runs the compiled JSON Schema over it;
//! for a valid body that work is thrown away (the handler parses the bytes into its own type).
//! [`Fast`] walks the bytes with serde_json's deserializer instead, checking the keywords
//! that ordinary request schemas use as it goes, without allocating. It answers only
//! "certainly valid": anything it cannot vouch for (a mismatch, malformed JSON, a keyword it
//! does not know, a number it cannot compare exactly) makes it give up, and the full check
//! runs and words the errors. So it can make a valid request cheaper but can never let an
//! invalid one through, and the errors callers see come from one place.
//!
//! Parts of a schema outside the supported set (`enum`, `oneOf`, `$ref`, `multipleOf`, ...)
//! are still checked on the fast path by the compiled JSON Schema of that part alone, run on
//! that part of the body parsed to a [`Value`]; `pattern` and asserted `format`s likewise on
//! the string alone.

use std::cmp::Ordering;
use std::fmt;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Keywords that only annotate: they never make an instance invalid.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "default",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
    "$comment",
    "externalDocs",
    "xml",
];

/// Keywords whose presence anywhere makes the schema's meaning depend on more than its own
/// tree; such schemas always take the full check.
const UNSUPPORTED_ANYWHERE: &[&str] = &[
    "$schema",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "$vocabulary",
];

/// Integers up to this magnitude convert to `f64` exactly.
const EXACT_IN_F64: u64 = 1 << 53;

/// The most properties (declared plus required) an object check tracks in its bit set.
const MAX_TRACKED: usize = 64;

/// A body schema compiled for the fast check.
pub(crate) struct Fast {
    root: Node,
}

impl Fast {
    /// Compiles `schema` (with `format` asserted when `formats`), or `None` when the fast
    /// check would not help: the schema uses keywords with document-wide meaning, or its
    /// root is outside the supported set.
    pub(crate) fn compile(schema: &Value, formats: bool) -> Option<Self> {
        if !self_contained(schema) {
            return None;
        }
        let compiler = Compiler {
            defs: schema.get("$defs"),
            formats,
        };
        match compiler.node(schema, true)? {
            Node::Delegate(_) => None,
            root => Some(Self { root }),
        }
    }

    /// Whether `bytes` are one JSON value that certainly fits the schema. `false` means
    /// "not known": the full check decides.
    pub(crate) fn accepts(&self, bytes: &[u8]) -> bool {
        // One pass over the whole body checks its UTF-8 faster than string by string.
        let Ok(text) = std::str::from_utf8(bytes) else {
            return false;
        };
        let mut deserializer = serde_json::Deserializer::from_str(text);
        (&self.root).deserialize(&mut deserializer).is_ok() && deserializer.end().is_ok()
    }
}

/// How one subschema is checked.
enum Node {
    /// Everything fits (`true`, `{}`, annotations only).
    Any,
    /// Nothing fits (`false`).
    Never,
    /// Checked while reading.
    Checked(Box<Checks>),
    /// Read into a [`Value`] and checked by the compiled schema of this part.
    Delegate(Box<jsonschema::Validator>),
}

/// The supported keywords of one subschema. A keyword applies only to instances of its
/// type, as in JSON Schema.
struct Checks {
    types: Types,
    min_length: Option<u64>,
    max_length: Option<u64>,
    /// `pattern` and asserted `format`s other than `email`, checked on string instances by
    /// JSON Schema.
    string_extra: Option<jsonschema::Validator>,
    /// An asserted `format: email`: addresses of the common plain shape are accepted here,
    /// any other is checked by JSON Schema.
    email: Option<jsonschema::Validator>,
    minimum: Option<Number>,
    maximum: Option<Number>,
    exclusive_minimum: Option<Number>,
    exclusive_maximum: Option<Number>,
    items: Node,
    min_items: Option<u64>,
    max_items: Option<u64>,
    /// Declared properties, sorted by name; bit `i` of the seen set is `properties[i]`.
    properties: Vec<(Box<str>, Node)>,
    /// Required names that are not declared; bit `properties.len() + i`.
    required_other: Vec<Box<str>>,
    /// The bits that must be seen.
    required: u64,
    additional: Node,
}

/// A set of JSON types, one bit each.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Types(u8);

impl Types {
    const NULL: Self = Self(1);
    const BOOLEAN: Self = Self(1 << 1);
    const INTEGER: Self = Self(1 << 2);
    /// `number` admits integers too.
    const NUMBER: Self = Self(1 << 3);
    const STRING: Self = Self(1 << 4);
    const ARRAY: Self = Self(1 << 5);
    const OBJECT: Self = Self(1 << 6);
    const ALL: Self = Self(0x7f);

    fn named(name: &str) -> Option<Self> {
        Some(match name {
            "null" => Self::NULL,
            "boolean" => Self::BOOLEAN,
            "integer" => Self::INTEGER,
            "number" => Self::NUMBER,
            "string" => Self::STRING,
            "array" => Self::ARRAY,
            "object" => Self::OBJECT,
            _ => return None,
        })
    }

    fn has(self, other: Self) -> bool {
        self.0 & other.0 != 0
    }
}

struct Compiler<'a> {
    /// The root's `$defs`, attached to delegated parts that refer to them.
    defs: Option<&'a Value>,
    formats: bool,
}

impl Compiler<'_> {
    /// The node for `schema`; `None` when no part of the check can be trusted (a delegated
    /// part does not compile on its own).
    fn node(&self, schema: &Value, root: bool) -> Option<Node> {
        let object = match schema {
            Value::Bool(true) => return Some(Node::Any),
            Value::Bool(false) => return Some(Node::Never),
            Value::Object(object) => object,
            _ => return None,
        };
        match self.checks(object, root) {
            Some(Some(checks)) => Some(checks),
            Some(None) => self.delegate(object),
            None => None,
        }
    }

    /// The checks of `schema`: `Some(None)` when it has a keyword outside the supported set
    /// (so it is delegated whole), `None` when a part cannot be compiled.
    fn checks(&self, schema: &Map<String, Value>, root: bool) -> Option<Option<Node>> {
        let mut checks = Checks {
            types: Types::ALL,
            min_length: None,
            max_length: None,
            string_extra: None,
            email: None,
            minimum: None,
            maximum: None,
            exclusive_minimum: None,
            exclusive_maximum: None,
            items: Node::Any,
            min_items: None,
            max_items: None,
            properties: Vec::new(),
            required_other: Vec::new(),
            required: 0,
            additional: Node::Any,
        };
        let mut extra = Map::new();
        let mut email = false;
        let mut required: &[Value] = &[];
        let mut any_check = false;
        for (keyword, value) in schema {
            if ANNOTATIONS.contains(&keyword.as_str()) || (root && keyword == "$defs") {
                continue;
            }
            any_check = true;
            let understood = match keyword.as_str() {
                "type" => types(value).map(|t| checks.types = t).is_some(),
                "minLength" => count(value).map(|n| checks.min_length = Some(n)).is_some(),
                "maxLength" => count(value).map(|n| checks.max_length = Some(n)).is_some(),
                "pattern" => {
                    extra.insert(keyword.clone(), value.clone());
                    true
                }
                "format" => {
                    if self.formats && value == "email" {
                        email = true;
                    } else if self.formats {
                        extra.insert(keyword.clone(), value.clone());
                    }
                    true
                }
                "minimum" => number(value).map(|n| checks.minimum = Some(n)).is_some(),
                "maximum" => number(value).map(|n| checks.maximum = Some(n)).is_some(),
                "exclusiveMinimum" => number(value)
                    .map(|n| checks.exclusive_minimum = Some(n))
                    .is_some(),
                "exclusiveMaximum" => number(value)
                    .map(|n| checks.exclusive_maximum = Some(n))
                    .is_some(),
                "items" if value.is_object() || value.is_boolean() => {
                    checks.items = self.node(value, false)?;
                    true
                }
                "minItems" => count(value).map(|n| checks.min_items = Some(n)).is_some(),
                "maxItems" => count(value).map(|n| checks.max_items = Some(n)).is_some(),
                "properties" => match value {
                    Value::Object(properties) => {
                        for (name, schema) in properties {
                            let node = self.node(schema, false)?;
                            checks.properties.push((name.as_str().into(), node));
                        }
                        true
                    }
                    _ => false,
                },
                "required" => match value {
                    Value::Array(names) if names.iter().all(Value::is_string) => {
                        required = names;
                        true
                    }
                    _ => false,
                },
                "additionalProperties" => {
                    checks.additional = self.node(value, false)?;
                    true
                }
                _ => false,
            };
            if !understood {
                return Some(None);
            }
        }
        if checks.types.has(Types::STRING) {
            if !extra.is_empty() {
                checks.string_extra = Some(self.compile(&Value::Object(extra))?);
            }
            if email {
                checks.email = Some(self.compile(&serde_json::json!({"format": "email"}))?);
            }
        }
        checks.properties.sort_by(|a, b| a.0.cmp(&b.0));
        for name in required.iter().filter_map(Value::as_str) {
            let bit = match checks.properties.binary_search_by(|(p, _)| (**p).cmp(name)) {
                Ok(index) => index,
                Err(_) => match checks.required_other.iter().position(|r| &**r == name) {
                    Some(index) => checks.properties.len() + index,
                    None => {
                        checks.required_other.push(name.into());
                        checks.properties.len() + checks.required_other.len() - 1
                    }
                },
            };
            if bit >= MAX_TRACKED {
                return Some(None);
            }
            checks.required |= 1 << bit;
        }
        if checks.properties.len() + checks.required_other.len() > MAX_TRACKED {
            return Some(None);
        }
        Some(Some(if any_check {
            Node::Checked(Box::new(checks))
        } else {
            Node::Any
        }))
    }

    fn delegate(&self, schema: &Map<String, Value>) -> Option<Node> {
        let mut schema = schema.clone();
        if let Some(defs) = self.defs
            && !schema.contains_key("$defs")
        {
            schema.insert("$defs".into(), defs.clone());
        }
        let validator = self.compile(&Value::Object(schema))?;
        Some(Node::Delegate(Box::new(validator)))
    }

    fn compile(&self, schema: &Value) -> Option<jsonschema::Validator> {
        jsonschema::options()
            .should_validate_formats(self.formats)
            .build(schema)
            .ok()
    }
}

/// Whether the schema's meaning is its own tree plus the root's `$defs`: no keyword with
/// document-wide meaning, and every `$ref` into `#/$defs/`.
fn self_contained(schema: &Value) -> bool {
    match schema {
        Value::Object(object) => object.iter().all(|(keyword, value)| {
            !UNSUPPORTED_ANYWHERE.contains(&keyword.as_str())
                && (keyword != "$ref" || value.as_str().is_some_and(|r| r.starts_with("#/$defs/")))
                && self_contained(value)
        }),
        Value::Array(items) => items.iter().all(self_contained),
        _ => true,
    }
}

fn types(value: &Value) -> Option<Types> {
    match value {
        Value::String(name) => Types::named(name),
        Value::Array(names) => names.iter().try_fold(Types(0), |set, name| {
            Some(Types(set.0 | Types::named(name.as_str()?)?.0))
        }),
        _ => None,
    }
}

fn count(value: &Value) -> Option<u64> {
    value.as_u64()
}

fn number(value: &Value) -> Option<Number> {
    match value {
        Value::Number(number) => Some(number.clone()),
        _ => None,
    }
}

/// Whether `address` has the plain shape most addresses have, which every reading of
/// RFC 5321 accepts: a dot-atom local part of letters, digits and `._+-` (at most 64
/// characters, dots not first, last or doubled), `@`, and a domain of at least two labels of
/// letters, digits and inner hyphens (each at most 63 characters, the last starting with a
/// letter, at most 253 in all). `false` only means "not this shape".
fn plain_email(address: &str) -> bool {
    let Some((local, domain)) = address.split_once('@') else {
        return false;
    };
    let local_fits = (1..=64).contains(&local.len())
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'));
    let mut labels = 0;
    let domain_fits = domain.len() <= 253
        && domain.split('.').all(|label| {
            labels += 1;
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && domain
            .rsplit('.')
            .next()
            .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_alphabetic()));
    local_fits && domain_fits && labels >= 2
}

/// A number as read from the body.
#[derive(Clone, Copy)]
enum Num {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

impl Num {
    /// How `self` compares with `limit`, when that can be told exactly.
    fn compare(self, limit: &Number) -> Option<Ordering> {
        let limit = if let Some(u) = limit.as_u64() {
            Self::Unsigned(u)
        } else if let Some(i) = limit.as_i64() {
            Self::Signed(i)
        } else {
            Self::Float(limit.as_f64()?)
        };
        match (self, limit) {
            (Self::Float(a), Self::Float(b)) => a.partial_cmp(&b),
            (Self::Float(a), int) => int.exact_f64().and_then(|b| a.partial_cmp(&b)),
            (int, Self::Float(b)) => int.exact_f64().and_then(|a| a.partial_cmp(&b)),
            (a, b) => Some(a.wide().cmp(&b.wide())),
        }
    }

    fn wide(self) -> i128 {
        match self {
            Self::Unsigned(u) => i128::from(u),
            Self::Signed(i) => i128::from(i),
            // Floats are compared as floats; never asked.
            Self::Float(_) => 0,
        }
    }

    #[allow(clippy::cast_precision_loss)] // guarded: only magnitudes f64 holds exactly
    fn exact_f64(self) -> Option<f64> {
        match self {
            Self::Unsigned(u) if u <= EXACT_IN_F64 => Some(u as f64),
            Self::Signed(i) if i.unsigned_abs() <= EXACT_IN_F64 => Some(i as f64),
            _ => None,
        }
    }
}

/// "Not known to fit": the reading stops and the full check decides.
fn unsure<E: de::Error>() -> E {
    E::custom("not known to fit")
}

fn check(fits: bool) -> Result<(), ()> {
    if fits { Ok(()) } else { Err(()) }
}

impl<'de> DeserializeSeed<'de> for &Node {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self {
            Node::Any => IgnoredAny::deserialize(deserializer).map(drop),
            Node::Never => Err(unsure()),
            Node::Checked(checks) => deserializer.deserialize_any(&**checks),
            Node::Delegate(validator) => {
                let value = Value::deserialize(deserializer)?;
                if validator.is_valid(&value) {
                    Ok(())
                } else {
                    Err(unsure())
                }
            }
        }
    }
}

impl Checks {
    fn number<E: de::Error>(&self, number: Num) -> Result<(), E> {
        let above = |limit: &Option<Number>, strict: bool| {
            limit
                .as_ref()
                .is_none_or(|limit| match number.compare(limit) {
                    Some(Ordering::Greater) => true,
                    Some(Ordering::Equal) => !strict,
                    _ => false,
                })
        };
        let below = |limit: &Option<Number>, strict: bool| {
            limit
                .as_ref()
                .is_none_or(|limit| match number.compare(limit) {
                    Some(Ordering::Less) => true,
                    Some(Ordering::Equal) => !strict,
                    _ => false,
                })
        };
        check(
            above(&self.minimum, false)
                && above(&self.exclusive_minimum, true)
                && below(&self.maximum, false)
                && below(&self.exclusive_maximum, true),
        )
        .map_err(|()| unsure())
    }

    fn integer<E: de::Error>(&self, number: Num) -> Result<(), E> {
        if !self.types.has(Types::INTEGER) && !self.types.has(Types::NUMBER) {
            return Err(unsure());
        }
        self.number(number)
    }

    /// Whether a string's length in characters is within `minLength`..=`maxLength`. A
    /// character takes one to four bytes in UTF-8, so the byte length mostly decides without
    /// counting.
    fn length_within(&self, value: &str) -> bool {
        let (min, max) = (self.min_length, self.max_length);
        if min.is_none() && max.is_none() {
            return true;
        }
        let bytes = value.len() as u64;
        if Self::within(bytes, max.map(|_| 0), max) && Self::within(bytes.div_ceil(4), min, None) {
            return true;
        }
        Self::within(value.chars().count() as u64, min, max)
    }

    fn within(count: u64, min: Option<u64>, max: Option<u64>) -> bool {
        min.is_none_or(|min| count >= min) && max.is_none_or(|max| count <= max)
    }
}

impl<'de> Visitor<'de> for &Checks {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        check(self.types.has(Types::NULL)).map_err(|()| unsure())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        check(self.types.has(Types::BOOLEAN)).map_err(|()| unsure())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.integer(Num::Unsigned(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.integer(Num::Signed(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        // A float with no fraction is an integer to JSON Schema; left to the full check.
        if !self.types.has(Types::NUMBER) {
            return Err(unsure());
        }
        self.number(Num::Float(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        if !self.types.has(Types::STRING) || !self.length_within(value) {
            return Err(unsure());
        }
        let fits = |validator: &Option<jsonschema::Validator>| {
            validator
                .as_ref()
                .is_none_or(|v| v.is_valid(&Value::String(value.to_owned())))
        };
        let email = self.email.is_none() || plain_email(value) || fits(&self.email);
        check(email && fits(&self.string_extra)).map_err(|()| unsure())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if !self.types.has(Types::ARRAY) {
            return Err(unsure());
        }
        let mut length = 0u64;
        while seq.next_element_seed(&self.items)?.is_some() {
            length += 1;
        }
        check(Checks::within(length, self.min_items, self.max_items)).map_err(|()| unsure())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if !self.types.has(Types::OBJECT) {
            return Err(unsure());
        }
        let mut seen = 0u64;
        while let Some(key) = map.next_key_seed(Key(self))? {
            let node = match key {
                Slot::Declared(index) => &self.properties[index].1,
                Slot::Other(_) => &self.additional,
            };
            if let Slot::Declared(bit) | Slot::Other(Some(bit)) = key {
                // A repeated name: a parsed value keeps the last; left to the full check.
                if seen & (1 << bit) != 0 {
                    return Err(unsure());
                }
                seen |= 1 << bit;
            }
            map.next_value_seed(node)?;
        }
        check(seen & self.required == self.required).map_err(|()| unsure())
    }
}

/// Where a property name leads: a declared property, or the others (with the bit of a
/// required but undeclared name).
#[derive(Clone, Copy)]
enum Slot {
    Declared(usize),
    Other(Option<usize>),
}

/// Reads a property name into its [`Slot`] without allocating.
struct Key<'a>(&'a Checks);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Slot;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Slot, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Slot;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Slot, E> {
        let checks = self.0;
        Ok(
            match checks.properties.binary_search_by(|(p, _)| (**p).cmp(name)) {
                Ok(index) => Slot::Declared(index),
                Err(_) => Slot::Other(
                    checks
                        .required_other
                        .iter()
                        .position(|r| &**r == name)
                        .map(|index| checks.properties.len() + index),
                ),
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                true, true, true, false, false, false, false, false, false, false, false, false,
                false, false
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
    fn plain_addresses_are_ones_json_schema_accepts() {
        let full = jsonschema::options()
            .should_validate_formats(true)
            .build(&json!({"format": "email"}))
            .unwrap();
        let long_label = format!("a@{}.com", "b".repeat(63));
        let long_local = format!("{}@example.com", "a".repeat(64));
        for address in [
            "reader@example.com",
            "first.last+tag@mail.example.co.uk",
            "a_b-c@x1.io",
            "A@B-C.org",
            &long_label,
            &long_local,
        ] {
            assert!(plain_email(address), "{address}");
            assert!(full.is_valid(&json!(address)), "{address}");
        }
        let too_long_label = format!("a@{}.com", "b".repeat(64));
        let too_long_local = format!("{}@example.com", "a".repeat(65));
        for address in [
            "plain",
            "@example.com",
            "a@",
            "a@localhost",
            ".a@example.com",
            "a.@example.com",
            "a..b@example.com",
            "a@-x.com",
            "a@x-.com",
            "a@x..com",
            "a@example.123",
            "\"quoted\"@example.com",
            "a@[127.0.0.1]",
            "a@b@example.com",
            "ü@example.com",
            &too_long_label,
            &too_long_local,
        ] {
            assert!(!plain_email(address), "{address}");
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
}
