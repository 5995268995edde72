//! Reading a `multipart/form-data` body (RFC 7578) into its parts, so that the schema checks
//! them as it checks a form: text parts as form fields, `application/json` parts as the
//! values they hold, files as strings.

use halo_protocol::Problem;
use memchr::memmem;
use serde_json::Value;

/// One part: its field name, whether it says it is JSON, and its bytes.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Part<'b> {
    pub(super) name: String,
    pub(super) json: bool,
    pub(super) bytes: &'b [u8],
}

/// The `boundary` parameter of a `multipart/form-data` media type, unquoted.
pub(super) fn boundary(content_type: &str) -> Option<&str> {
    content_type.split(';').skip(1).find_map(|parameter| {
        let (name, value) = parameter.split_once('=')?;
        name.trim()
            .eq_ignore_ascii_case("boundary")
            .then(|| value.trim().trim_matches('"'))
            .filter(|boundary| (1..=70).contains(&boundary.len()))
    })
}

/// The parts of `body`, in order; a message saying what is wrong when it is not multipart
/// with this boundary.
pub(super) fn parts<'b>(body: &'b [u8], boundary: &str) -> Result<Vec<Part<'b>>, &'static str> {
    let delimiter = format!("--{boundary}");
    let between = format!("\r\n--{boundary}");
    let first = memmem::find(body, delimiter.as_bytes()).ok_or("no part starts the body")?;
    let mut rest = &body[first + delimiter.len()..];
    let finder = memmem::Finder::new(between.as_bytes());
    let mut parts = Vec::new();
    loop {
        if rest.starts_with(b"--") {
            return Ok(parts);
        }
        rest = rest
            .strip_prefix(b"\r\n")
            .ok_or("a boundary is not followed by a line break")?;
        let end = memmem::find(rest, b"\r\n\r\n").ok_or("a part's headers do not end")?;
        let headers =
            std::str::from_utf8(&rest[..end]).map_err(|_| "a part's headers are not UTF-8")?;
        let content = &rest[end + 4..];
        let close = finder.find(content).ok_or("the last part is not closed")?;
        let (name, json) = part_headers(headers)?;
        parts.push(Part {
            name,
            json,
            bytes: &content[..close],
        });
        rest = &content[close + between.len()..];
    }
}

/// The field name (from `Content-Disposition: form-data; name="..."`) and whether the part's
/// `Content-Type` is JSON.
fn part_headers(headers: &str) -> Result<(String, bool), &'static str> {
    let mut name = None;
    let mut json = false;
    for line in headers.split("\r\n") {
        let Some((header, value)) = line.split_once(':') else {
            continue;
        };
        if header.trim().eq_ignore_ascii_case("content-disposition") {
            name = value.split(';').skip(1).find_map(|parameter| {
                let (key, value) = parameter.split_once('=')?;
                key.trim()
                    .eq_ignore_ascii_case("name")
                    .then(|| unquote(value.trim()))
            });
        } else if header.trim().eq_ignore_ascii_case("content-type") {
            json = halo_protocol::is_json(halo_protocol::essence(value.trim()));
        }
    }
    Ok((name.ok_or("a part has no field name")?, json))
}

/// A quoted name with the percent-escapes of RFC 7578 §2 undone (`%22` is `"`).
fn unquote(value: &str) -> String {
    let inner = value
        .strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(value);
    percent_encoding::percent_decode_str(inner)
        .decode_utf8_lossy()
        .into_owned()
}

/// The parts as the value a schema checks: text parts read as form fields are (brackets
/// nest, repeats are arrays, texts take the schema's types), JSON parts as their values (the
/// text when it is not JSON, for the schema to report), files as (lossy) text.
pub(super) fn read(parts: &[Part<'_>], schema: &Value) -> Value {
    let texts: Vec<(&str, String)> = parts
        .iter()
        .filter(|part| !part.json)
        .map(|part| {
            (
                part.name.as_str(),
                String::from_utf8_lossy(part.bytes).into_owned(),
            )
        })
        .collect();
    let read = super::form::read(
        texts.iter().map(|(name, text)| (*name, text.as_str())),
        schema,
    );
    // No text parts read as an empty array, and a schema that says array can make numbered
    // names one: the fields are then an object of the JSON parts alone.
    let mut object = match read {
        Value::Object(object) => object,
        _ => serde_json::Map::new(),
    };
    for part in parts.iter().filter(|part| part.json) {
        let parsed = serde_json::from_slice(part.bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(part.bytes).into_owned()));
        object.insert(part.name.clone(), parsed);
    }
    Value::Object(object)
}

/// A body sent as `content_type` as the value its parts stand for under `schema`; `400` when
/// the media type names no `boundary` or the parts are malformed.
pub(super) fn read_body(
    bytes: &[u8],
    content_type: Option<&str>,
    schema: &Value,
) -> Result<Value, Box<Problem>> {
    let boundary = content_type
        .and_then(boundary)
        .ok_or_else(|| Problem::new(400).with_detail("a multipart body needs a `boundary`"))?;
    let parts = parts(bytes, boundary).map_err(|why| {
        Problem::new(400).with_detail(format!("the multipart body is malformed: {why}"))
    })?;
    Ok(read(&parts, schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BODY: &[u8] = b"preamble\r\n--XyZ\r\nContent-Disposition: form-data; name=\"title\"\r\n\r\nDune\r\n--XyZ\r\nContent-Disposition: form-data; name=\"meta\"\r\nContent-Type: application/json\r\n\r\n{\"pages\":412}\r\n--XyZ\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\na\r\n--XyZ\r\nContent-Disposition: form-data; name=\"tags\"\r\n\r\nb\r\n--XyZ\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n\xff\x00--XyZ\r\n--XyZ--\r\n";

    #[test]
    fn parts_in_order_with_names_and_kinds() {
        assert_eq!(boundary("multipart/form-data; boundary=XyZ"), Some("XyZ"));
        assert_eq!(
            boundary("multipart/form-data; charset=x; Boundary=\"a b\""),
            Some("a b")
        );
        assert_eq!(boundary("multipart/form-data"), None);
        let parts = parts(BODY, "XyZ").unwrap();
        let names: Vec<&str> = parts.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["title", "meta", "tags", "tags", "file"]);
        assert!(parts[1].json && !parts[0].json);
        assert_eq!(parts[4].bytes, b"\xff\x00--XyZ");
        let schema = json!({"type": "object", "properties": {
            "title": {"type": "string"}, "meta": {"type": "object"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "file": {"type": "string", "format": "binary"}}});
        let value = read(&parts, &schema);
        assert_eq!(value["title"], "Dune");
        assert_eq!(value["meta"], json!({"pages": 412}));
        assert_eq!(value["tags"], json!(["a", "b"]));
        assert!(value["file"].is_string());
    }

    #[test]
    fn json_parts_alone_and_numbered_names_read_as_an_object() {
        let only_json = b"--b\r\nContent-Disposition: form-data; name=\"0\"\r\nContent-Type: application/json\r\n\r\n[1]\r\n--b--";
        let parts = parts(only_json, "b").unwrap();
        assert_eq!(read(&parts, &json!({"type": "object"})), json!({"0": [1]}));
        let numbered = b"--b\r\nContent-Disposition: form-data; name=\"0\"\r\n\r\nx\r\n--b--";
        let parts = super::parts(numbered, "b").unwrap();
        assert_eq!(read(&parts, &json!({"type": "array"})), json!({}));
    }

    #[test]
    fn broken_bodies_say_why() {
        assert!(parts(b"no boundary here", "XyZ").is_err());
        assert!(
            parts(
                b"--XyZ\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nopen",
                "XyZ"
            )
            .is_err()
        );
        assert!(parts(b"--XyZ\r\nno end of headers", "XyZ").is_err());
        assert!(
            parts(
                b"--XyZ\r\nContent-Type: text/plain\r\n\r\nx\r\n--XyZ--",
                "XyZ"
            )
            .is_err()
        );
        assert!(parts(b"--XyZ--\r\n", "XyZ").unwrap().is_empty());
    }
}
