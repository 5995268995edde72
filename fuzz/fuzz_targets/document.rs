//! Reading a document from any bytes (JSON or YAML, Swagger 2.0 converted) never panics and
//! fails within its bounds; what it reads reads again as OpenAPI 3 with nothing to convert;
//! building it leniently, with validation, never panics, and every operation it leaves out
//! is reported with a reason.
#![no_main]

use halo_openapi::{Document, DocumentLimits, Registry, Validation};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(document) = Document::read(data) else {
        return;
    };
    let json = document.json();
    let version = json["openapi"]
        .as_str()
        .expect("an OpenAPI 3 version, as a string");
    assert!(version.starts_with("3."), "{version}");

    // What was read (and converted) is OpenAPI 3 as JSON: read again, nothing is converted
    // (unless converting nested it past the bound on depth).
    match Document::read(&serde_json::to_vec(json).unwrap()) {
        Ok(again) => assert!(again.notes().is_empty(), "{:?}", again.notes()),
        Err(error) => assert!(error.is_limit(), "{error}"),
    }

    let built = Registry::builder(json)
        .validation(Validation::On)
        .limits(
            DocumentLimits::new()
                .max_depth(64)
                .max_schema_bytes(1 << 20),
        )
        .lenient()
        .build();
    if let Ok(registry) = built {
        for skipped in registry.skipped() {
            assert!(!skipped.reason().is_empty());
            let method = skipped.method();
            assert!(method == "*" || method.bytes().all(|b| b.is_ascii_uppercase()));
        }
    }
});
