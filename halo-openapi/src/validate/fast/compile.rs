//! A body schema compiled for the fast check: the supported keywords of each subschema
//! gathered into its [`Checks`], the rest delegated to JSON Schema.

use serde_json::{Map, Number, Value};

use super::{Checks, Fast, Node, Types};

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

/// The most properties (declared plus required) an object check tracks in its bit set.
const MAX_TRACKED: usize = 64;

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
