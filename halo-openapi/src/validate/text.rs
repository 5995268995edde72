//! Text read as the JSON values a schema allows (`"7"` as `7` where the schema takes an
//! integer), and query strings decoded into pairs: shared by the parameter and the form
//! readers.

use halo_protocol::Problem;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Number, Value};

/// The JSON types a text may be read as, besides a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Types {
    integer: bool,
    number: bool,
    boolean: bool,
}

impl Types {
    pub(super) fn of(schema: &Map<String, Value>) -> Self {
        let mut types = Self::default();
        for name in type_names(schema) {
            match name {
                "integer" => types.integer = true,
                "number" => types.number = true,
                "boolean" => types.boolean = true,
                _ => {}
            }
        }
        types
    }

    /// Either's types.
    pub(super) fn or(self, other: Self) -> Self {
        Self {
            integer: self.integer || other.integer,
            number: self.number || other.number,
            boolean: self.boolean || other.boolean,
        }
    }

    /// The value `text` stands for: the first type it parses as, else the text itself.
    pub(super) fn read(self, text: &str) -> Value {
        if self.integer {
            if let Ok(n) = text.parse::<i64>() {
                return Value::Number(n.into());
            }
            if let Ok(n) = text.parse::<u64>() {
                return Value::Number(n.into());
            }
        }
        if self.number
            && let Some(n) = text.parse::<f64>().ok().and_then(Number::from_f64)
        {
            return Value::Number(n);
        }
        if self.boolean && matches!(text, "true" | "false") {
            return Value::Bool(text == "true");
        }
        Value::String(text.to_owned())
    }
}

/// The `type` names of a schema (`"integer"` or `["integer", "null"]`).
pub(super) fn type_names(schema: &Map<String, Value>) -> impl Iterator<Item = &str> {
    let names: Vec<&str> = match schema.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    names.into_iter()
}

/// The pairs of a query string (`a=1&b=x+y`), percent-decoded; `400` when a name or value is
/// not UTF-8 once decoded.
pub(super) fn parse_query(query: &str) -> Result<Vec<(String, String)>, Box<Problem>> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(name)?, decode(value)?))
        })
        .collect()
}

fn decode(text: &str) -> Result<String, Box<Problem>> {
    let spaced = text.replace('+', " ");
    percent_decode_str(&spaced)
        .decode_utf8()
        .map(|text| text.into_owned())
        .map_err(|_| {
            Box::new(
                Problem::new(400).with_detail("the query string is not UTF-8 once percent-decoded"),
            )
        })
}
