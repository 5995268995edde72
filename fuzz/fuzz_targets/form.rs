//! Form fields, written as clients write them and read as the layer reads them: reading any
//! text never panics, and a value written with `deepObject` brackets reads back the same.
#![no_main]

use halo_protocol::{Payload, ToolSchema, place_arguments};
use libfuzzer_sys::fuzz_target;

#[path = "choices.rs"]
mod choices;
use choices::Choices;
use serde_json::{Map, Value, json};

/// A value whose every container holds something, and the schema that describes it.
fn value(choices: &mut Choices<'_>, depth: usize) -> (Value, Value) {
    let pick = if depth == 0 {
        choices.next() % 3
    } else {
        choices.next() % 5
    };
    match pick {
        0 => {
            let text: String = (0..choices.next() % 6)
                .map(|_| {
                    [' ', '&', '=', '+', '%', '[', ']', '#', 'é', '/']
                        [usize::from(choices.next()) % 10]
                })
                .collect();
            (json!(format!("t{text}")), json!({"type": "string"}))
        }
        1 => (
            json!(i64::from(choices.next()) - 100),
            json!({"type": "integer"}),
        ),
        2 => (json!(choices.next() % 2 == 0), json!({"type": "boolean"})),
        3 => {
            let (first, schema) = value(choices, depth - 1);
            let mut items = vec![first];
            for _ in 0..choices.next() % 3 {
                // Items of one schema: the same kind as the first.
                items.push(items[0].clone());
            }
            (
                Value::Array(items),
                json!({"type": "array", "items": schema}),
            )
        }
        _ => {
            let mut object = Map::new();
            let mut properties = Map::new();
            for i in 0..1 + choices.next() % 3 {
                let (member, schema) = value(choices, depth - 1);
                object.insert(format!("k{i}"), member);
                properties.insert(format!("k{i}"), schema);
            }
            (
                Value::Object(object),
                json!({"type": "object", "properties": properties}),
            )
        }
    }
}

fuzz_target!(|data: &[u8]| {
    // Any text reads without panicking, as a form and as multipart.
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = halo_axum::fuzzing::read_form(text, &json!({"type": "object"}));
    }
    let _ = halo_axum::fuzzing::read_multipart(
        data,
        "multipart/form-data; boundary=b",
        &json!({"type": "object"}),
    );

    let mut choices = Choices(data);
    let (field, field_schema) = value(&mut choices, 3);
    let mut entry = field_schema.as_object().unwrap().clone();
    entry.insert("in".into(), json!("body"));
    entry.insert(
        "media_type".into(),
        json!("application/x-www-form-urlencoded"),
    );
    entry.insert("style".into(), json!("deepObject"));
    let schema: ToolSchema = serde_json::from_value(json!({
        "call": {"method": "POST", "url": "/f"},
        "input": {"field": entry}
    }))
    .unwrap();
    let placed = place_arguments("/f", "POST", Some(&schema), json!({"field": field})).unwrap();
    let Some(Payload::Raw {
        content_type,
        bytes,
    }) = placed.body
    else {
        panic!("a form body");
    };
    assert_eq!(content_type, "application/x-www-form-urlencoded");
    let body = String::from_utf8(bytes).unwrap();
    let whole = json!({"type": "object", "properties": {"field": field_schema}});
    let read = halo_axum::fuzzing::read_form(&body, &whole).unwrap();
    assert_eq!(read, json!({"field": field}), "{body}");

    // The same as multipart, without a style (objects go as JSON parts).
    let mut multipart = schema.clone();
    let entry = multipart.input.get_mut("field").unwrap();
    entry.media_type = Some("multipart/form-data".into());
    entry.style = None;
    let placed = place_arguments("/f", "POST", Some(&multipart), json!({"field": field})).unwrap();
    let Some(Payload::Raw { content_type, bytes }) = placed.body else {
        panic!("a multipart body");
    };
    let read = halo_axum::fuzzing::read_multipart(&bytes, &content_type, &whole)
        .expect("a boundary")
        .expect("well-formed parts");
    assert_eq!(read, json!({"field": field}), "{}", String::from_utf8_lossy(&bytes));
});
