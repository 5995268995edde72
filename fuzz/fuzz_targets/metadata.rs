//! Reading `x-halo-*` extensions never panics, and metadata that was read writes extensions
//! that read back to the same metadata.
#![no_main]

use halo_protocol::Metadata;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(extensions)) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let meta = match Metadata::from_extensions(extensions.iter().map(|(k, v)| (k.as_str(), v))) {
        Ok(meta) => meta,
        Err(error) => {
            let _ = error.to_string();
            return;
        }
    };
    let written = meta.to_extensions();
    let again = Metadata::from_extensions(written.iter().map(|(k, v)| (k.as_str(), v)))
        .unwrap_or_else(|e| panic!("written extensions {written:?} do not read back: {e}"));
    assert_eq!(meta, again, "written as {written:?}");
    assert_eq!(again.to_extensions(), written);
});
