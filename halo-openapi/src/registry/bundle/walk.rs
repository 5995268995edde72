//! How a schema is read: which keys of an object hold schemas, references, instance data or
//! vendor extensions; the references a schema makes, found within the depth limit; and what
//! a local reference points at.

use serde_json::Value;

use super::share::Shares;
use super::{Bundler, Link, Problem};

impl<'d> Bundler<'d> {
    /// Collects the references of a schema (not those inside instance data), checking its
    /// depth on the way. A subschema the document repeats ([`Shares`]) counts as a reference
    /// to it, unless it is the schema itself.
    pub(super) fn references(
        &self,
        shares: &Shares<'d>,
        value: &'d Value,
        depth: usize,
        found: &mut Vec<Link<'d>>,
    ) -> Result<(), Deep> {
        let walk = References {
            shares,
            max_depth: self.limits.max_depth,
            root: depth,
        };
        walk.collect(value, Keys::Keywords, depth, found)
    }
}

/// [`Bundler::references`] under way.
struct References<'s, 'd> {
    shares: &'s Shares<'d>,
    max_depth: usize,
    /// The depth of the schema the walk started from.
    root: usize,
}

impl<'d> References<'_, 'd> {
    /// The references of a value whose object keys are `keys`.
    fn collect(
        &self,
        value: &'d Value,
        keys: Keys,
        depth: usize,
        found: &mut Vec<Link<'d>>,
    ) -> Result<(), Deep> {
        if depth > self.max_depth {
            return Err(Deep::new(self.max_depth));
        }
        match value {
            Value::Object(map) => {
                if keys == Keys::Keywords
                    && depth > self.root
                    && let Some(share) = self.shares.of(value)
                {
                    found.push(Link::Shared(share));
                    return Ok(());
                }
                for (key, inner) in map {
                    match keys.read(key) {
                        Read::Reference => {
                            if let Value::String(reference) = inner {
                                found.push(Link::Reference(reference));
                            }
                        }
                        Read::Data | Read::Extension => {}
                        Read::Schema(inner_keys) => self
                            .collect(inner, inner_keys, depth + 1, found)
                            .map_err(|e| e.push(key))?,
                    }
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    self.collect(item, Keys::Keywords, depth + 1, found)
                        .map_err(|e| e.push(&i.to_string()))?;
                }
            }
            _ => {}
        }
        Ok(())
    }
}

/// A schema nested too deeply, and the path to it, gathered on the way up.
#[derive(Debug)]
pub(super) struct Deep {
    tokens: Vec<String>,
    limit: usize,
}

impl Deep {
    fn new(limit: usize) -> Self {
        Self {
            tokens: Vec::new(),
            limit,
        }
    }

    fn push(mut self, token: &str) -> Self {
        self.tokens
            .push(halo_protocol::escape_token(token).into_owned());
        self
    }

    fn pointer(&self) -> String {
        let mut pointer = String::new();
        for token in self.tokens.iter().rev() {
            pointer.push('/');
            pointer.push_str(token);
        }
        pointer
    }

    /// Inside the document, under `reference`.
    pub(super) fn at(self, reference: &str) -> Problem {
        Problem::Limit {
            at: format!("{reference}{}", self.pointer()),
            limit: "max_depth",
            value: self.limit,
        }
    }

    /// Inside the operation's own schema.
    pub(super) fn at_root(self) -> Problem {
        Problem::Limit {
            at: format!("schema{}", self.pointer()),
            limit: "max_depth",
            value: self.limit,
        }
    }
}

/// `Value::pointer` without allocating for tokens that need no unescaping.
pub(super) fn pointer_lookup<'v>(document: &'v Value, pointer: &str) -> Option<&'v Value> {
    let mut target = document;
    if pointer.is_empty() {
        return Some(target);
    }
    for token in pointer.strip_prefix('/')?.split('/') {
        let token = halo_protocol::unescape_token(token);
        target = match target {
            Value::Object(map) => map.get(token.as_ref())?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(target)
}

/// The `$ref` of a reference object.
pub(super) fn reference_of(value: &Value) -> Option<&str> {
    value.get("$ref").and_then(Value::as_str)
}

/// What the keys of a JSON object inside a schema are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Keys {
    /// Keywords: the object is a schema (or a part of one, such as `discriminator`).
    Keywords,
    /// Names of properties or definitions, each naming a schema: a property may be called
    /// `default`, `enum` or `x-request-id` without being one.
    Names,
}

/// How one key of an object is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Read {
    /// `$ref`.
    Reference,
    /// Instance data (`example`, `enum`, `default`, ...): a `$ref` inside is data too.
    Data,
    /// A vendor extension (`x-…`), which is not served.
    Extension,
    /// A schema, or a value holding schemas, whose own keys are these.
    Schema(Keys),
}

impl Keys {
    pub(super) fn read(self, key: &str) -> Read {
        match self {
            Self::Names => Read::Schema(Self::Keywords),
            Self::Keywords if key == "$ref" => Read::Reference,
            Self::Keywords if halo_protocol::is_data_keyword(key) => Read::Data,
            Self::Keywords if key.starts_with("x-") => Read::Extension,
            Self::Keywords => Read::Schema(
                if matches!(
                    key,
                    "properties"
                        | "patternProperties"
                        | "$defs"
                        | "definitions"
                        | "dependentSchemas"
                ) {
                    Self::Names
                } else {
                    Self::Keywords
                },
            ),
        }
    }
}
