//! Reading a credentials file never panics, and neither what it reads (`Debug`) nor its
//! error messages show a secret of it: a `value`, `password` or `client_secret`.
#![no_main]

use halo_client::Credentials;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// The fields of an entry that hold secrets.
const SECRETS: [&str; 3] = ["value", "password", "client_secret"];

fuzz_target!(|data: &[u8]| {
    let Ok(json) = std::str::from_utf8(data) else {
        return;
    };
    let shown = match Credentials::from_json(json) {
        Ok(credentials) => format!("{credentials:?}"),
        Err(error) => format!("{error} {error:?}"),
    };
    // The secrets the file holds, and everything else it says (which may be shown).
    let Ok(Value::Object(entries)) = serde_json::from_str::<Value>(json) else {
        return;
    };
    let mut secrets = Vec::new();
    let mut public = String::new();
    for (host, entry) in &entries {
        public.push_str(host);
        public.push('\n');
        let Value::Object(fields) = entry else {
            public.push_str(&entry.to_string());
            continue;
        };
        for (name, value) in fields {
            public.push_str(name);
            public.push('\n');
            match value.as_str() {
                Some(secret) if SECRETS.contains(&name.as_str()) => secrets.push(secret),
                _ => {
                    public.push_str(&value.to_string());
                    public.push('\n');
                }
            }
        }
    }
    for secret in secrets {
        // Short or expanded secrets, or ones the file also says elsewhere, prove nothing.
        if secret.len() < 8 || secret.contains("${") || public.contains(secret) {
            continue;
        }
        assert!(!shown.contains(secret), "a secret is shown: {shown}");
    }
});
