//! Reading a gateway configuration never panics, and neither what it reads nor its error
//! messages show a value an `${ENV}` reference stood for.
#![no_main]

use halo_gateway::Config;
use libfuzzer_sys::fuzz_target;

const SECRET: &str = "fuzz-secret-0123456789abcdef";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Config::from_text_with_env(text, ".", |_| Some(SECRET.to_owned())) {
        Ok(config) => {
            let _ = config.listen();
        }
        Err(error) => {
            // A secret written into the file itself may be quoted back; one that came from
            // the environment may not.
            let message = error.to_string();
            assert!(text.contains(SECRET) || !message.contains(SECRET), "{message}");
        }
    }
});
