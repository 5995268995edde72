//! Every document of the corpus read as a gateway reads a document it does not own
//! (`Document::read`: JSON or YAML, Swagger 2.0 converted) and built leniently with
//! validation on: each builds, and every operation it describes is a tool or is reported.
//!
//! `cargo nextest run -p halo-tests --test corpus_read --no-capture` prints, per document,
//! the tools built, the operations left out and repaired, and why; with `HALO_CORPUS_VERBOSE`
//! set, every reason in full.

use std::collections::BTreeMap;
use std::time::Instant;

use halo_openapi::{Document, Registry, Validation};
use halo_tests::corpus;

#[test]
fn every_document_reads_and_builds_leniently() {
    let mut failures = Vec::new();
    for document in corpus::Document::EVERY {
        let bytes = document.bytes();
        let started = Instant::now();
        let read =
            Document::read(&bytes).unwrap_or_else(|error| panic!("{}: {error}", document.name()));
        let registry = Registry::builder(read.json())
            .validation(Validation::On)
            .lenient()
            .build()
            .unwrap_or_else(|error| panic!("{}: {error}", document.name()));
        let elapsed = started.elapsed();
        let tools = registry.tools().count();
        let (repaired, left_out): (Vec<_>, Vec<_>) =
            registry.skipped().iter().partition(|s| s.is_repaired());
        println!(
            "{}: {tools} tools, {} left out, {} repaired, {} notes, in {:.0?} (debug build)",
            document.name(),
            left_out.len(),
            repaired.len(),
            read.notes().len(),
            elapsed,
        );
        for note in read.notes() {
            println!("  note: {note}");
        }
        // Why, each kind of reason once with how often: the reason without the operation
        // it names, cut at its first colon after that.
        let mut reasons: BTreeMap<(bool, String), usize> = BTreeMap::new();
        for skipped in registry.skipped() {
            let reason = skipped.reason();
            let why = reason.split_once("): ").map_or(reason, |(_, why)| why);
            let why: String = why.chars().take(110).collect();
            *reasons.entry((skipped.is_repaired(), why)).or_default() += 1;
        }
        if std::env::var_os("HALO_CORPUS_VERBOSE").is_some() {
            for skipped in registry.skipped() {
                println!("  {}", skipped.reason());
            }
        }
        for ((repaired, why), count) in reasons {
            let what = if repaired { "repaired" } else { "left out" };
            println!("  {what} ×{count}: {why}");
        }
        let served = tools + left_out.len();
        if served != document.operations() {
            failures.push(format!(
                "{}: {tools} tools + {} left out = {served}, not the {} operations it describes",
                document.name(),
                left_out.len(),
                document.operations()
            ));
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}
