//! The layer's fast body check never vouches for a body that JSON Schema refuses.
//!
//! Input: a byte of settings (bit 0: formats asserted), then a JSON Schema and a JSON body
//! separated by `0xFF` (a byte UTF-8 never holds). Whenever the fast check accepts the body,
//! the compiled schema must find it valid; the check never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Some((&settings, rest)) = data.split_first() else {
        return;
    };
    let formats = settings & 1 == 1;
    let mut parts = rest.splitn(2, |&b| b == 0xFF);
    let (Some(schema), Some(body)) = (parts.next(), parts.next()) else {
        return;
    };
    let Ok(schema) = serde_json::from_slice::<Value>(schema) else {
        return;
    };
    let Ok(full) = jsonschema::options()
        .should_validate_formats(formats)
        .build(&schema)
    else {
        return;
    };
    if halo_axum::fuzzing::fast_body_check(&schema, formats, body) == Some(true) {
        let instance: Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("accepted a body that is not JSON ({e})"));
        assert!(
            full.is_valid(&instance),
            "accepted {instance} against {schema}"
        );
    }
});
