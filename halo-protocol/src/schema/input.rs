//! One argument of a tool's `input`: the JSON Schema keywords of a parameter or body
//! property, with where it goes in the request and whether it is required.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One parameter of an operation: a self-contained JSON Schema plus where it goes.
///
/// HALO marks a required parameter with `"required": true` beside the schema's keywords, which
/// collides with JSON Schema's own `required` list on object schemas. Such a schema is written
/// nested, `{"allOf": [schema], "required": true, "in": "body"}`, so neither meaning is lost;
/// reading accepts both forms and undoes the nesting, so [`schema`](Self::schema) is always the
/// parameter's own schema.
///
/// ```
/// use halo_protocol::{InputField, Location};
///
/// let field = InputField::new(serde_json::json!({"minimum": 1, "type": "integer"}))
///     .located(Location::Path)
///     .required(true);
/// assert_eq!(
///     serde_json::to_string(&field).unwrap(),
///     r#"{"minimum":1,"type":"integer","required":true,"in":"path"}"#
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct InputField {
    /// The JSON Schema keywords of the parameter.
    pub schema: Map<String, Value>,
    /// Whether the parameter must be given.
    pub required: bool,
    /// Where the parameter goes in the request (extension).
    pub location: Option<Location>,
    /// How its value is written, as OpenAPI's `style` says (`form`, `deepObject`, `simple`,
    /// `spaceDelimited`, `pipeDelimited`); `None` for the location's default (extension).
    pub style: Option<String>,
    /// Whether arrays and objects are written as several parameters (OpenAPI's `explode`);
    /// `None` for the style's default (extension).
    pub explode: Option<bool>,
    /// For an entry of a request body that is not JSON, the body's media type
    /// (`application/x-www-form-urlencoded`, `multipart/form-data`): the client encodes the
    /// body entries that way (extension).
    pub media_type: Option<String>,
}

impl Serialize for InputField {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        if self.schema.contains_key("required") || self.schema.contains_key("in") {
            if let Some(description) = self.schema.get("description") {
                map.serialize_entry("description", description)?;
            }
            map.serialize_entry("allOf", &[&self.schema])?;
        } else {
            for (keyword, value) in &self.schema {
                map.serialize_entry(keyword, value)?;
            }
        }
        if self.required {
            map.serialize_entry("required", &true)?;
        }
        if let Some(location) = &self.location {
            map.serialize_entry("in", location)?;
        }
        if let Some(style) = &self.style {
            map.serialize_entry("style", style)?;
        }
        if let Some(explode) = &self.explode {
            map.serialize_entry("explode", explode)?;
        }
        if let Some(media_type) = &self.media_type {
            map.serialize_entry("media_type", media_type)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for InputField {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut schema = Map::<String, Value>::deserialize(deserializer)?;
        let required = match schema.get("required") {
            Some(Value::Bool(required)) => {
                let required = *required;
                schema.remove("required");
                required
            }
            _ => false,
        };
        let location = match schema.get("in").map(|v| Location::deserialize(v.clone())) {
            Some(Ok(location)) => {
                schema.remove("in");
                Some(location)
            }
            _ => None,
        };
        let mut text = |key: &str| match schema.get(key) {
            Some(Value::String(_)) => match schema.remove(key) {
                Some(Value::String(text)) => Some(text),
                _ => None,
            },
            _ => None,
        };
        let style = text("style");
        let media_type = text("media_type");
        let explode = match schema.get("explode") {
            Some(&Value::Bool(explode)) => {
                schema.remove("explode");
                Some(explode)
            }
            _ => None,
        };
        Ok(Self {
            schema: unnest(schema),
            required,
            location,
            style,
            explode,
            media_type,
        })
    }
}

/// Undoes the nesting HALO uses for an entry whose schema has its own `required` list:
/// `{"description": d, "allOf": [schema]}` is `schema` (with `d` as its description).
fn unnest(mut schema: Map<String, Value>) -> Map<String, Value> {
    let only_nesting = schema
        .keys()
        .all(|keyword| keyword == "allOf" || keyword == "description");
    let single = matches!(
        schema.get("allOf"),
        Some(Value::Array(items)) if items.len() == 1 && items[0].is_object()
    );
    if !only_nesting || !single {
        return schema;
    }
    let description = schema.remove("description");
    let Some(Value::Array(mut items)) = schema.remove("allOf") else {
        return schema;
    };
    let Some(Value::Object(mut inner)) = items.pop() else {
        return schema;
    };
    match (description, inner.get("description")) {
        (Some(outer), Some(own)) if outer != *own => {
            // Both say something different: keep the nesting, nothing is lost.
            let mut kept = Map::new();
            kept.insert("description".into(), outer);
            kept.insert("allOf".into(), Value::Array(vec![Value::Object(inner)]));
            return kept;
        }
        (Some(outer), None) => {
            inner.insert("description".into(), outer);
        }
        _ => {}
    }
    inner
}

impl InputField {
    /// A field with this schema. A schema that is not a JSON object becomes `{}` (anything).
    #[must_use]
    pub fn new(schema: Value) -> Self {
        let schema = match schema {
            Value::Object(map) => map,
            _ => Map::new(),
        };
        Self {
            schema,
            required: false,
            location: None,
            style: None,
            explode: None,
            media_type: None,
        }
    }

    /// Sets how the value is written (OpenAPI's `style` and `explode`), for a style other
    /// than the location's default.
    ///
    /// ```
    /// use halo_protocol::{InputField, Location};
    ///
    /// let created = InputField::new(serde_json::json!({"type": "object"}))
    ///     .located(Location::Query)
    ///     .styled("deepObject", Some(true));
    /// assert_eq!(
    ///     serde_json::to_string(&created).unwrap(),
    ///     r#"{"type":"object","in":"query","style":"deepObject","explode":true}"#
    /// );
    /// ```
    #[must_use]
    pub fn styled(mut self, style: impl Into<String>, explode: Option<bool>) -> Self {
        self.style = Some(style.into());
        self.explode = explode;
        self
    }

    /// Sets the media type of the (non-JSON) request body this entry is part of.
    #[must_use]
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = Some(media_type.into());
        self
    }

    /// Sets where the parameter goes.
    #[must_use]
    pub fn located(mut self, location: Location) -> Self {
        self.location = Some(location);
        self
    }

    /// Sets whether the parameter is required.
    #[must_use]
    pub fn required(mut self, required: bool) -> Self {
        self.required = required;
        self
    }
}

/// Where a parameter goes in the request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Location {
    /// A path template variable.
    Path,
    /// A query parameter.
    Query,
    /// A request header.
    Header,
    /// A property of the JSON body, or (named `body`) the whole body.
    Body,
}
