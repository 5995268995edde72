//! Reading path, query and header parameters into JSON values the schema can check.

use halo_protocol::{FieldError, Location, Problem};
use http::HeaderMap;
use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

use super::text::{Types, type_names};

/// One parameter: where it is read from and what its text becomes.
#[derive(Debug)]
pub(super) struct Param {
    name: String,
    location: Location,
    shape: Shape,
    style: Style,
}

/// How a query parameter's value is written, where it is not one text per value.
#[derive(Debug)]
enum Style {
    /// One text per value (`p=1&p=2` for an array): `form` with `explode`, and every path
    /// and header parameter.
    Plain,
    /// An array in one text, its items separated (`form` without `explode`: `,`;
    /// `spaceDelimited`; `pipeDelimited`).
    Delimited(char),
    /// `p[k]=v` (`deepObject`): read by the schema of an object holding the parameter.
    Deep(Value),
    /// An object whose properties are parameters of their own (`form` with `explode`).
    Spread(Value),
}

/// What a parameter's schema says its text stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// One value; each of these types is tried in turn, text last.
    Scalar(Types),
    /// Several values (repeated in the query, comma-separated in a path or header), each of
    /// the item types.
    Array(Types),
}

impl Param {
    /// A parameter named `name` with the schema `schema` (its `$defs` included), written in
    /// `style` with `explode` (`None`: the defaults).
    pub(super) fn new(
        name: &str,
        location: Location,
        schema: &Map<String, Value>,
        style: Option<&str>,
        explode: Option<bool>,
    ) -> Self {
        let is = |wanted: &str| type_names(schema).any(|name| name == wanted);
        let style = match (location, style, explode) {
            (Location::Query, Some("deepObject"), _) => {
                let mut properties = Map::new();
                properties.insert(name.to_owned(), Value::Object(schema.clone()));
                let mut holder = Map::new();
                holder.insert("properties".to_owned(), Value::Object(properties));
                if let Some(defs) = schema.get("$defs") {
                    holder.insert("$defs".to_owned(), defs.clone());
                }
                Style::Deep(Value::Object(holder))
            }
            (Location::Query, Some("form") | None, Some(false)) if is("array") => {
                Style::Delimited(',')
            }
            (Location::Query, Some("spaceDelimited"), _) => Style::Delimited(' '),
            (Location::Query, Some("pipeDelimited"), _) => Style::Delimited('|'),
            (Location::Query, Some("form"), None | Some(true)) if is("object") => {
                Style::Spread(Value::Object(schema.clone()))
            }
            _ => Style::Plain,
        };
        let shape = if type_names(schema).any(|name| name == "array") {
            let items = schema
                .get("items")
                .and_then(Value::as_object)
                .map(Types::of)
                .unwrap_or_default();
            Shape::Array(items)
        } else {
            Shape::Scalar(Types::of(schema))
        };
        Self {
            name: name.to_owned(),
            location,
            shape,
            style,
        }
    }

    /// The parameter's value in the request, `None` when absent. Text that cannot be read
    /// (bad percent-encoding, a header that is not visible ASCII) is a `400`; a scalar given
    /// several times is an error in `errors`.
    pub(super) fn read(
        &self,
        path: &[(&str, &str)],
        query: &[(String, String)],
        headers: &HeaderMap,
        errors: &mut Vec<FieldError>,
    ) -> Result<Option<Value>, Box<Problem>> {
        let texts: Vec<String> = match self.location {
            Location::Path => match path.iter().find(|(name, _)| *name == self.name) {
                Some((_, raw)) => {
                    let text = percent_decode_str(raw).decode_utf8().map_err(|_| {
                        Problem::new(400).with_detail(format!(
                            "path parameter `{}` is not UTF-8 once percent-decoded",
                            self.name
                        ))
                    })?;
                    self.split(&text)
                }
                None => Vec::new(),
            },
            Location::Query => match &self.style {
                Style::Deep(holder) => return Ok(self.deep(query, holder)),
                Style::Spread(schema) => return Ok(spread(query, schema)),
                Style::Delimited(separator) => query
                    .iter()
                    .filter(|(name, _)| *name == self.name)
                    .flat_map(|(_, value)| value.split(*separator).map(str::to_owned))
                    .collect(),
                Style::Plain => query
                    .iter()
                    .filter(|(name, _)| *name == self.name)
                    .map(|(_, value)| value.clone())
                    .collect(),
            },
            Location::Header => {
                let mut texts = Vec::new();
                for value in headers.get_all(self.name.as_str()) {
                    let text = value.to_str().map_err(|_| {
                        Problem::new(400).with_detail(format!(
                            "header `{}` holds characters other than visible ASCII",
                            self.name
                        ))
                    })?;
                    texts.extend(self.split(text));
                }
                texts
            }
            _ => Vec::new(),
        };
        Ok(match (self.shape, texts.as_slice()) {
            (_, []) => None,
            (Shape::Scalar(types), [text]) => Some(types.read(text)),
            (Shape::Scalar(_), several) => {
                errors.push(FieldError::new(
                    format!("/{}", self.name),
                    format!("given {} times but takes one value", several.len()),
                ));
                None
            }
            (Shape::Array(items), texts) => Some(Value::Array(
                texts.iter().map(|text| items.read(text)).collect(),
            )),
        })
    }

    /// `p[k]=v` pairs as the object they stand for; `None` when there are none.
    fn deep(&self, query: &[(String, String)], holder: &Value) -> Option<Value> {
        let prefix = format!("{}[", self.name);
        let pairs: Vec<(&str, &str)> = query
            .iter()
            .filter(|(key, _)| key.starts_with(&prefix))
            .map(|(key, value)| (key.as_str(), value.as_str()))
            .collect();
        if pairs.is_empty() {
            return None;
        }
        let mut read = super::form::read(pairs, holder);
        read.get_mut(&self.name).map(Value::take)
    }

    /// A path or header value: one text, or comma-separated items for an array.
    fn split(&self, text: &str) -> Vec<String> {
        match self.shape {
            Shape::Array(_) => text.split(',').map(|item| item.trim().to_owned()).collect(),
            Shape::Scalar(_) => vec![text.to_owned()],
        }
    }
}

/// The properties of an object written as parameters of their own; `None` when none is given.
fn spread(query: &[(String, String)], schema: &Value) -> Option<Value> {
    let properties = schema.get("properties").and_then(Value::as_object)?;
    let pairs: Vec<(&str, &str)> = query
        .iter()
        .filter(|(key, _)| properties.contains_key(key))
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect();
    if pairs.is_empty() {
        return None;
    }
    Some(super::form::read(pairs, schema))
}

#[cfg(test)]
mod tests {
    use super::super::text::parse_query;
    use super::*;
    use serde_json::json;

    fn param(location: Location, schema: Value) -> Param {
        Param::new("p", location, schema.as_object().unwrap(), None, None)
    }

    fn read(param: &Param, query: &str) -> (Option<Value>, Vec<FieldError>) {
        let mut errors = Vec::new();
        let query = parse_query(query).unwrap();
        let value = param
            .read(&[], &query, &HeaderMap::new(), &mut errors)
            .unwrap();
        (value, errors)
    }

    #[test]
    fn text_becomes_what_the_schema_asks_for() {
        let int = param(Location::Query, json!({"type": "integer"}));
        assert_eq!(read(&int, "p=42").0, Some(json!(42)));
        assert_eq!(read(&int, "p=4.2").0, Some(json!("4.2")));
        assert_eq!(read(&int, "q=1").0, None);
        let number = param(Location::Query, json!({"type": ["number", "null"]}));
        assert_eq!(read(&number, "p=4.5").0, Some(json!(4.5)));
        assert_eq!(read(&number, "p=NaN").0, Some(json!("NaN")));
        let flag = param(Location::Query, json!({"type": "boolean"}));
        assert_eq!(read(&flag, "p=true").0, Some(json!(true)));
        let text = param(Location::Query, json!({"type": "string"}));
        assert_eq!(read(&text, "p=a+b%20c").0, Some(json!("a b c")));
        let list = param(
            Location::Query,
            json!({"type": "array", "items": {"type": "integer"}}),
        );
        assert_eq!(read(&list, "p=1&p=x&p=3").0, Some(json!([1, "x", 3])));
        let (value, errors) = read(&int, "p=1&p=2");
        assert_eq!(value, None);
        assert_eq!(errors[0].pointer, "/p");
    }

    #[test]
    fn styles_are_read_as_written() {
        let query = |schema: Value, style: &str, explode: Option<bool>| {
            Param::new(
                "p",
                Location::Query,
                schema.as_object().unwrap(),
                Some(style),
                explode,
            )
        };
        let range = json!({"type": "object", "properties": {
            "gte": {"type": "integer"}, "lt": {"type": "integer"}}});
        let deep = query(range.clone(), "deepObject", Some(true));
        assert_eq!(
            read(&deep, "p%5Bgte%5D=1&p[lt]=2&q=3").0,
            Some(json!({"gte": 1, "lt": 2}))
        );
        assert_eq!(read(&deep, "q=3").0, None);
        let list = json!({"type": "array", "items": {"type": "integer"}});
        assert_eq!(
            read(&query(list.clone(), "form", Some(false)), "p=1,2").0,
            Some(json!([1, 2]))
        );
        assert_eq!(
            read(&query(list.clone(), "pipeDelimited", None), "p=1|x").0,
            Some(json!([1, "x"]))
        );
        assert_eq!(
            read(&query(list, "spaceDelimited", None), "p=1+2").0,
            Some(json!([1, 2]))
        );
        let spread = query(range, "form", Some(true));
        assert_eq!(read(&spread, "gte=5&other=1").0, Some(json!({"gte": 5})));
    }

    #[test]
    fn unreadable_text_is_a_bad_request() {
        assert_eq!(parse_query("a=%FF").unwrap_err().status, 400);
        assert_eq!(parse_query("%C3%28=1").unwrap_err().status, 400);
        assert_eq!(
            parse_query("a=1&&b&c=%41").unwrap(),
            vec![
                ("a".into(), "1".into()),
                ("b".into(), String::new()),
                ("c".into(), "A".into())
            ]
        );
        let path = param(Location::Path, json!({"type": "string"}));
        let error = path
            .read(&[("p", "%FF")], &[], &HeaderMap::new(), &mut Vec::new())
            .unwrap_err();
        assert_eq!(error.status, 400);
    }
}
