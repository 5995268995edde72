//! Reading documents: JSON or YAML, what is not a document, and hostile input, which must
//! fail with a reason, quickly, and never panic.

use serde_json::json;

use super::{Document, MAX_BYTES};
use crate::Registry;

fn read(text: &str) -> Result<Document, super::ReadError> {
    Document::read(text.as_bytes())
}

#[test]
fn json_is_told_by_its_first_character() {
    for text in [
        r#"{"openapi": "3.1.0", "paths": {}}"#,
        " \n\t{\"openapi\": \"3.0.3\"}",
        "\u{feff}{\"openapi\": \"3.0.0\"}",
    ] {
        let document = read(text).unwrap();
        assert!(document.json()["openapi"].is_string(), "{text}");
        assert!(document.notes().is_empty());
    }
}

#[test]
fn json_syntax_errors_say_where() {
    let error = read("{\"openapi\": \"3.1.0\",\n  \"paths\": {\"/a\": }\n}").unwrap_err();
    assert!(error.is_syntax());
    let message = error.to_string();
    assert!(message.contains("not well-formed JSON"), "{message}");
    assert!(message.contains("line 2, column 19"), "{message}");
}

#[test]
fn what_is_no_document_is_unsupported() {
    for text in [
        "[1, 2]",
        r#"{"info": {"title": "No version"}}"#,
        r#"{"swagger": "1.2"}"#,
        r#"{"openapi": "4.0.0"}"#,
        r#"{"openapi": {"version": 3}}"#,
    ] {
        let error = read(text).unwrap_err();
        assert!(error.is_unsupported(), "{text}: {error}");
    }
}

#[test]
fn the_builder_still_refuses_swagger_it_is_given_as_json() {
    let swagger = json!({"swagger": "2.0", "info": {"title": "T", "version": "1"}, "paths": {}});
    let error = Registry::builder(&swagger).build().unwrap_err();
    assert!(
        error.to_string().contains("Swagger \"2.0\" document"),
        "{error}"
    );
    let converted = Document::read(swagger.to_string().as_bytes()).unwrap();
    assert!(Registry::builder(converted.json()).build().is_ok());
}

/// Hostile JSON: each fails (or reads) quickly, with a reason, and nothing panics.
#[test]
fn hostile_json_fails_with_a_reason() {
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(read(&deep).unwrap_err().is_limit());
    let deep_objects = format!("{}{}", "{\"a\":".repeat(10_000), "}".repeat(10_000));
    assert!(read(&deep_objects).unwrap_err().is_limit());

    let invalid = b"{\"openapi\": \"3.1.0\", \"x\": \"\xff\xfe\"}";
    assert!(Document::read(invalid).unwrap_err().is_syntax());

    let huge = read(r#"{"openapi": "3.1.0", "x": 1e400}"#).unwrap_err();
    assert!(huge.is_syntax(), "{huge}");
    let long = read(r#"{"openapi": "3.1.0", "x": 123456789012345678901234567890}"#).unwrap();
    assert!(long.json()["x"].is_f64());

    let twice = read(r#"{"openapi": "3.0.0", "openapi": "3.1.0"}"#).unwrap();
    assert_eq!(
        twice.json()["openapi"],
        "3.1.0",
        "the last value, as serde_json reads it"
    );

    let mut large = vec![b' '; MAX_BYTES + 1];
    large[0] = b'{';
    assert!(Document::read(&large).unwrap_err().is_limit());
    assert!(Document::read(b"").is_err());
    assert!(Document::read(b"\x00\x01\x02").is_err());
}

#[cfg(not(feature = "yaml"))]
#[test]
fn yaml_needs_the_feature() {
    let error = read("openapi: 3.1.0\npaths: {}\n").unwrap_err();
    assert!(error.is_unsupported());
    assert!(error.to_string().contains("`yaml` feature"), "{error}");
}

#[cfg(feature = "yaml")]
mod yaml {
    use super::read;

    #[test]
    fn yaml_reads_by_the_core_schema() {
        let document = read(
            "openapi: 3.1.0\n\
             info: {title: Dates, version: 1}\n\
             paths: {}\n\
             x-examples:\n  day: 2024-01-01\n  answer: yes\n  mode: 0755\n  count: 1_000\n  \
             big: .inf\n  time: 12:30:00\n  hex: 0x1F\n  none: ~\n  float: 1.5\n",
        )
        .unwrap();
        let examples = &document.json()["x-examples"];
        assert_eq!(examples["day"], "2024-01-01", "dates stay strings");
        assert_eq!(examples["answer"], "yes");
        assert_eq!(examples["mode"], "0755");
        assert_eq!(examples["count"], "1_000");
        assert_eq!(examples["big"], ".inf");
        assert_eq!(examples["time"], "12:30:00");
        assert_eq!(examples["hex"], 31);
        assert!(examples["none"].is_null());
        assert_eq!(examples["float"], 1.5);
        assert_eq!(document.json()["info"]["version"], 1);
    }

    #[test]
    fn an_unquoted_version_becomes_a_string() {
        let document = read("openapi: 3.0\npaths: {}\n").unwrap();
        assert_eq!(document.json()["openapi"], "3.0");
        assert_eq!(document.notes().len(), 1);
        let swagger = read("swagger: 2.0\ninfo: {title: T, version: '1'}\npaths: {}\n").unwrap();
        assert_eq!(swagger.json()["openapi"], "3.0.3");
    }

    #[test]
    fn yaml_syntax_errors_say_where() {
        let error = read("openapi: 3.1.0\npaths:\n  /a: [1, 2\n  /b: 3\n").unwrap_err();
        assert!(error.is_syntax(), "{error}");
        let message = error.to_string();
        assert!(
            message.contains("not well-formed YAML: line 4"),
            "{message}"
        );
        assert!(
            !message.contains('\n'),
            "one line, without a snippet: {message}"
        );
    }

    /// Hostile YAML: each fails quickly, with a reason, and nothing panics.
    #[test]
    fn hostile_yaml_fails_with_a_reason() {
        let mut laughs = String::from(
            "openapi: 3.1.0\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
        );
        let names: Vec<char> = ('b'..='j').collect();
        for (i, name) in names.iter().enumerate() {
            let previous = if i == 0 { 'a' } else { names[i - 1] };
            let refs = vec![format!("*{previous}"); 9].join(",");
            laughs.push_str(&format!("{name}: &{name} [{refs}]\n"));
        }
        let started = std::time::Instant::now();
        let error = read(&laughs).unwrap_err();
        assert!(error.is_limit(), "{error}");
        assert!(started.elapsed().as_secs() < 5, "{:?}", started.elapsed());

        let block: String = (0..10_000)
            .map(|depth| format!("{}- \n", "  ".repeat(depth)))
            .collect();
        assert!(read(&block).unwrap_err().is_limit());
        let flow = format!("openapi: 3.1.0\nx: {}", "[".repeat(10_000));
        assert!(read(&flow).unwrap_err().is_limit());

        assert!(
            super::Document::read(b"openapi: \"3.1.0\"\nx: \xff\xfe\n")
                .unwrap_err()
                .is_syntax()
        );
        let huge = read("openapi: 3.1.0\nx: 1e400\ny: 123456789012345678901234567890\n").unwrap();
        assert!(huge.json()["x"].is_string(), "JSON has no infinity");
        let twice = read("openapi: 3.0.0\nopenapi: 3.1.0\n").unwrap();
        assert_eq!(
            twice.json()["openapi"],
            "3.1.0",
            "the last value, as JSON has it"
        );
        assert!(read("openapi: 3.1.0\n---\nopenapi: 3.1.0\n").is_err());
        assert!(read("? [a, b]\n: c\n").is_err());
        assert!(read("openapi: !custom 3.1.0\n").is_ok());
    }
}
