//! Reading `key=text` pairs (a form body, or a `deepObject` query parameter) into the JSON
//! value they stand for, so that the schema checks them as it checks JSON.
//!
//! Brackets nest (`items[0][price]=p`, `metadata[k]=v`, `tags[]=a`); a key given several
//! times is an array; each text becomes the number or boolean its schema asks for, else
//! stays a string. Where the schema says an array, bracketed indices become one, in index
//! order (no index allocates anything: `a[4000000000]=x` is one item).

use halo_protocol::Problem;
use serde_json::{Map, Value};

use super::text::{Types, parse_query};

/// Deeper than this, brackets are not read: the key counts as one name.
const MAX_BRACKETS: usize = 32;

/// The value of pairs under `schema`, the schema of the whole (an object's), whose `$defs`
/// resolve its references.
pub(super) fn read<'p>(
    pairs: impl IntoIterator<Item = (&'p str, &'p str)>,
    schema: &Value,
) -> Value {
    let mut root = Node::default();
    for (key, text) in pairs {
        root.insert(&segments(key), text);
    }
    root.into_value(schema, schema.get("$defs").and_then(Value::as_object))
}

/// An `application/x-www-form-urlencoded` body as the value it stands for under `schema`;
/// `400` when it is not UTF-8, before or after percent-decoding.
pub(super) fn read_body(bytes: &[u8], schema: &Value) -> Result<Value, Box<Problem>> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| Problem::new(400).with_detail("the form body is not UTF-8"))?;
    let pairs = parse_query(text).map_err(|_| {
        Problem::new(400).with_detail("the form body is not UTF-8 once percent-decoded")
    })?;
    Ok(read(
        pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        schema,
    ))
}

/// The segments of a key: `a[b][0]` is `a`, `b`, `0`; `a[]` is `a`, ``. A key whose
/// brackets do not close, or that has too many, is one segment.
fn segments(key: &str) -> Vec<&str> {
    let Some(open) = key.find('[') else {
        return vec![key];
    };
    let mut out = vec![&key[..open]];
    let mut rest = &key[open..];
    while let Some(inner) = rest.strip_prefix('[') {
        let Some(close) = inner.find(']') else {
            return vec![key];
        };
        out.push(&inner[..close]);
        rest = &inner[close + 1..];
        if out.len() > MAX_BRACKETS {
            return vec![key];
        }
    }
    if rest.is_empty() { out } else { vec![key] }
}

/// Pairs gathered into a tree before the schema gives them types.
#[derive(Debug, Default)]
struct Node {
    texts: Vec<String>,
    /// Members in the order first given; `[]` appends a member of its own.
    members: Vec<(String, Self)>,
}

impl Node {
    fn insert(&mut self, segments: &[&str], text: &str) {
        let Some((first, rest)) = segments.split_first() else {
            self.texts.push(text.to_owned());
            return;
        };
        let child = if first.is_empty() {
            // `tags[]`: a new item each time.
            self.members.push((String::new(), Self::default()));
            &mut self.members.last_mut().expect("just pushed").1
        } else if let Some(at) = self.members.iter().position(|(name, _)| name == first) {
            &mut self.members[at].1
        } else {
            self.members.push(((*first).to_owned(), Self::default()));
            &mut self.members.last_mut().expect("just pushed").1
        };
        child.insert(rest, text);
    }

    fn into_value(self, schema: &Value, defs: Option<&Map<String, Value>>) -> Value {
        let schema = resolve(schema, defs);
        let wants_array = has_type(schema, defs, "array");
        if !self.members.is_empty() {
            if wants_array
                && self
                    .members
                    .iter()
                    .all(|(name, _)| name.is_empty() || name.parse::<u64>().is_ok())
            {
                let items = schema.get("items").unwrap_or(&Value::Bool(true));
                let mut members = self.members;
                members.sort_by_key(|(name, _)| name.parse::<u64>().unwrap_or(u64::MAX));
                return Value::Array(
                    members
                        .into_iter()
                        .map(|(_, node)| node.into_value(items, defs))
                        .collect(),
                );
            }
            let mut object = Map::new();
            for (name, node) in self.members {
                let member = member_schema(schema, defs, &name);
                object.insert(name, node.into_value(member, defs));
            }
            return Value::Object(object);
        }
        let mut texts = self.texts;
        if wants_array {
            let items = schema.get("items").unwrap_or(&Value::Bool(true));
            let item_types = types_of(resolve(items, defs), defs);
            return Value::Array(texts.iter().map(|text| item_types.read(text)).collect());
        }
        let types = types_of(schema, defs);
        match texts.len() {
            1 => types.read(&texts.pop().expect("one")),
            _ => Value::Array(texts.iter().map(|text| types.read(text)).collect()),
        }
    }
}

/// The schema a `$ref` into `$defs` stands for (a few hops at most).
fn resolve<'s>(mut schema: &'s Value, defs: Option<&'s Map<String, Value>>) -> &'s Value {
    for _ in 0..8 {
        let target = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix("#/$defs/"))
            .and_then(|name| defs?.get(name));
        match target {
            Some(target) => schema = target,
            None => break,
        }
    }
    schema
}

/// The schemas a value must match in full or in part: itself, and the branches of its
/// `anyOf`, `oneOf` and `allOf`.
fn branches<'s>(schema: &'s Value, defs: Option<&'s Map<String, Value>>) -> Vec<&'s Value> {
    let mut out = vec![schema];
    for keyword in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(items)) = schema.get(keyword) {
            out.extend(items.iter().map(|item| resolve(item, defs)));
        }
    }
    out
}

fn has_type(schema: &Value, defs: Option<&Map<String, Value>>, wanted: &str) -> bool {
    branches(schema, defs)
        .iter()
        .any(|branch| match branch.get("type") {
            Some(Value::String(name)) => name == wanted,
            Some(Value::Array(names)) => names.iter().any(|name| name == wanted),
            _ => false,
        })
}

/// The scalar types a text may be read as, over every branch.
fn types_of(schema: &Value, defs: Option<&Map<String, Value>>) -> Types {
    branches(schema, defs)
        .iter()
        .filter_map(|branch| branch.as_object())
        .fold(Types::default(), |types, branch| {
            types.or(Types::of(branch))
        })
}

/// The schema of member `name` of an object: its property, else `additionalProperties`, in
/// whichever branch has it.
fn member_schema<'s>(
    schema: &'s Value,
    defs: Option<&'s Map<String, Value>>,
    name: &str,
) -> &'s Value {
    const ANY: &Value = &Value::Bool(true);
    let branches = branches(schema, defs);
    branches
        .iter()
        .find_map(|branch| branch.get("properties")?.get(name))
        .or_else(|| {
            branches
                .iter()
                .find_map(|branch| branch.get("additionalProperties").filter(|a| a.is_object()))
        })
        .unwrap_or(ANY)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_all(pairs: &[(&str, &str)], schema: Value) -> Value {
        read(pairs.iter().copied(), &schema)
    }

    #[test]
    fn brackets_nest_and_texts_take_their_types() {
        let schema = json!({"type": "object", "properties": {
            "amount": {"type": "integer"},
            "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "items": {"$ref": "#/$defs/Item"}},
            "expand": {"type": "array", "items": {"type": "string"}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "live": {"anyOf": [{"type": "boolean"}, {"type": "string"}]}
        }, "$defs": {"Item": {"type": "object", "properties": {
            "price": {"type": "string"}, "quantity": {"type": "integer"}}}}});
        let value = read_all(
            &[
                ("amount", "2000"),
                ("metadata[order]", "42"),
                ("items[1][price]", "p_2"),
                ("items[0][price]", "p_1"),
                ("items[0][quantity]", "3"),
                ("expand[0]", "customer"),
                ("tags[]", "a"),
                ("tags[]", "b"),
                ("live", "true"),
            ],
            schema,
        );
        assert_eq!(
            value,
            json!({
                "amount": 2000,
                "metadata": {"order": "42"},
                "items": [{"price": "p_1", "quantity": 3}, {"price": "p_2"}],
                "expand": ["customer"],
                "tags": ["a", "b"],
                "live": true
            })
        );
    }

    #[test]
    fn repeats_become_arrays_and_odd_keys_stay_names() {
        let schema = json!({"type": "object", "properties": {
            "ids": {"type": "array", "items": {"type": "integer"}}}});
        let value = read_all(
            &[
                ("ids", "1"),
                ("ids", "x"),
                ("a[b", "1"),
                ("c]d", "2"),
                ("e[f]g", "3"),
            ],
            schema,
        );
        assert_eq!(
            value,
            json!({"ids": [1, "x"], "a[b": "1", "c]d": "2", "e[f]g": "3"})
        );
        let deep = format!("k{}", "[x]".repeat(MAX_BRACKETS + 1));
        let value = read_all(&[(deep.as_str(), "1")], json!({"type": "object"}));
        assert_eq!(value[deep.as_str()], "1");
        // An index far beyond the others is an item, nothing is allocated for the gap.
        let value = read_all(
            &[("ids[4000000000]", "1"), ("ids[0]", "2")],
            json!({"properties": {"ids": {"type": "array", "items": {"type": "integer"}}}}),
        );
        assert_eq!(value, json!({"ids": [2, 1]}));
    }
}
