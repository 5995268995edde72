//! A check of a JSON body against its schema that reads the bytes once and builds nothing.
//!
//! The full check parses the body into a [`Value`](serde_json::Value) and runs the compiled JSON Schema over it;
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
//! that part of the body parsed to a [`Value`](serde_json::Value); `pattern` and asserted `format`s likewise on
//! the string alone.
//!
//! A schema is compiled into [`Node`]s once ([`compile`]); a body is then read against them
//! ([`read`]), with the common shape of email addresses told apart without JSON Schema
//! ([`email`]).

mod compile;
mod email;
mod read;
#[cfg(test)]
mod tests;

use serde_json::Number;

/// A body schema compiled for the fast check.
pub(crate) struct Fast {
    root: Node,
}

/// How one subschema is checked.
enum Node {
    /// Everything fits (`true`, `{}`, annotations only).
    Any,
    /// Nothing fits (`false`).
    Never,
    /// Checked while reading.
    Checked(Box<Checks>),
    /// Read into a [`Value`](serde_json::Value) and checked by the compiled schema of this part.
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
