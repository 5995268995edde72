//! Rate parsing never panics, and every rate it accepts writes a canonical form that parses
//! back to the same rate.
#![no_main]

use halo_protocol::Rate;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    match input.parse::<Rate>() {
        Ok(rate) => {
            let written = rate.to_string();
            let again: Rate = written
                .parse()
                .unwrap_or_else(|e| panic!("{input:?} → {written:?} does not parse: {e}"));
            assert_eq!(rate, again, "{input:?} → {written:?}");
            assert_eq!(again.to_string(), written);
        }
        Err(error) => {
            let _ = error.to_string();
        }
    }
});
