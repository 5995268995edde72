//! Decoding an event stream never panics, and yields the same events (or the same error)
//! however the bytes are split into chunks.
#![no_main]

use halo_client::fuzzing::decode_chunks;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte says how to read the rest: bits 0-2 the number of cuts, bit 3 a small
    // event size limit; the next bytes place the cuts; the remainder is the body.
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let cuts = usize::from(head & 0b111);
    let max_event = if head & 0b1000 == 0 { 16 << 20 } else { 64 };
    if rest.len() < cuts {
        return;
    }
    let (places, body) = rest.split_at(cuts);

    let whole = decode_chunks([body], max_event);

    let mut at: Vec<usize> = places
        .iter()
        .map(|&place| usize::from(place) * body.len() / 255)
        .collect();
    at.sort_unstable();
    let mut chunks = Vec::with_capacity(cuts + 1);
    let mut start = 0;
    for end in at {
        chunks.push(&body[start..end]);
        start = end;
    }
    chunks.push(&body[start..]);
    assert_eq!(decode_chunks(chunks, max_event), whole, "cut at {places:?}");

    assert_eq!(
        decode_chunks(body.chunks(1), max_event),
        whole,
        "byte by byte"
    );
});
