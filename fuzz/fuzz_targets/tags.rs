//! The `?tags=` filter never panics, and what it keeps is what it documents: non-empty,
//! trimmed, comma-free, unique tags, each of which matches itself.
#![no_main]

use halo_protocol::TagFilter;
use libfuzzer_sys::fuzz_target;

fn check(filter: &TagFilter) {
    let tags = filter.tags();
    assert_eq!(filter.is_empty(), tags.is_empty());
    for (i, tag) in tags.iter().enumerate() {
        assert!(!tag.is_empty(), "{tags:?}");
        assert_eq!(tag.trim(), tag, "{tags:?}");
        assert!(!tag.contains(','), "{tags:?}");
        assert!(!tags[..i].contains(tag), "duplicate in {tags:?}");
        assert!(filter.matches([tag.as_str()]));
    }
    if filter.is_empty() {
        assert!(filter.matches(["read", "write"]));
        assert!(filter.matches([]));
    } else {
        assert!(!filter.matches([]));
    }
    let _ = filter.matches(["read", "write", "books", "x y", "\u{fffd}"]);
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let query = TagFilter::from_query(Some(input));
    check(&query);

    let parsed = TagFilter::parse(input);
    check(&parsed);
    // Parsing is idempotent: the tags written back read the same.
    assert_eq!(TagFilter::parse(&parsed.tags().join(",")), parsed);
});
