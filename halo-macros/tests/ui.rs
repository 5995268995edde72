//! Compile-time diagnostics of `#[halo]`, checked with trybuild.
//!
//! Regenerate the expected output with `TRYBUILD=overwrite cargo test -p halo-macros --test ui`,
//! then read the `.stderr` files: they are the messages users see.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/fail/*.rs");
    cases.pass("tests/ui/pass/*.rs");
}
