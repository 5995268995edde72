//! `Accept` negotiation never panics, and behaves as documented on any input.
#![no_main]

use halo_protocol::{MEDIA_TYPE, accepts, accepts_halo};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(accept) = std::str::from_utf8(data) else {
        return;
    };
    let halo = accepts_halo(accept);
    let _ = accepts(accept, "text/event-stream");
    let _ = accepts(accept, accept);

    assert_eq!(halo, accepts(accept, MEDIA_TYPE));
    // Only an explicit range for the media type activates HALO.
    if halo {
        assert!(
            accept.to_ascii_lowercase().contains(MEDIA_TYPE),
            "{accept:?}"
        );
    }
    // Types and the `q` parameter compare case-insensitively.
    assert_eq!(
        halo,
        accepts_halo(&accept.to_ascii_uppercase()),
        "{accept:?}"
    );
    assert_eq!(
        halo,
        accepts_halo(&accept.to_ascii_lowercase()),
        "{accept:?}"
    );
});
