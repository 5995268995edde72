//! Every document of the corpus read as a gateway reads a document it does not own
//! (`Document::read`: JSON or YAML, Swagger 2.0 converted) and built leniently with
//! validation on: each builds, and every operation it describes is a tool or is reported.
//!
//! `cargo nextest run -p halo-tests --no-capture corpus_read::` prints, per document,
//! the tools built, the operations left out and repaired, and why (with `HALO_CORPUS_VERBOSE`
//! set, every reason in full), and how large the served schemas are against the OpenAPI
//! slices of their operations: each must stay within 1.2× (a served schema that carries the
//! same definition twice fails; §5.4 writes what a tool's schemas share once, at its root).

use std::collections::BTreeMap;
use std::time::Instant;

use halo_openapi::{Document, Registry, Validation};
use halo_tests::corpus;
use halo_tests::slice::{minified, tool_slice};
use serde_json::Value;

/// The most a served schema may be of its operation's OpenAPI slice, in bytes.
const MAX_RATIO: f64 = 1.2;

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
        // Served bytes do not depend on validation; built without it, every operation is
        // measured, even one its validator would leave out.
        let unchecked = Registry::builder(read.json())
            .lenient()
            .build()
            .expect("builds");
        let mut ratios = ratios(read.json(), &unchecked);
        ratios.sort_by(|a, b| b.0.total_cmp(&a.0));
        let median = ratios.get(ratios.len() / 2).map_or(0.0, |r| r.0);
        let worst: Vec<String> = ratios
            .iter()
            .take(3)
            .map(|(ratio, label)| format!("{ratio:.2}x {label}"))
            .collect();
        println!(
            "  served schema / OpenAPI slice: median {median:.2}x, worst {}",
            worst.join(", ")
        );
        for (ratio, label) in ratios.iter().take_while(|(ratio, _)| *ratio > MAX_RATIO) {
            failures.push(format!(
                "{}: {label}: the served schema is {ratio:.2}x its OpenAPI slice (at most {MAX_RATIO})",
                document.name()
            ));
        }
        // Each of these documents is served whole: what once left operations out (OpenAI's
        // 2019-09 recursion, its 3.0-style bounds) is read as OpenAPI 3.1 says the same.
        for skipped in &left_out {
            failures.push(format!(
                "{}: left out {}",
                document.name(),
                skipped.reason()
            ));
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

/// Each tool's served schema (minified) over its operation's OpenAPI slice, with its label.
fn ratios(document: &Value, registry: &Registry) -> Vec<(f64, String)> {
    let Some(paths) = document["paths"].as_object() else {
        return Vec::new();
    };
    let mut ratios = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for key in paths.keys() {
        let template = key.split('#').next().unwrap_or(key);
        // `OPTIONS /` is the manifest, not the schemas of the tools at `/`.
        if template == "/" || !seen.insert(template) {
            continue;
        }
        let concrete = template.replace(['{', '}'], "");
        let Some(cached) = registry
            .path_index(&concrete)
            .and_then(|index| registry.full().path(index))
        else {
            continue;
        };
        let served: Vec<Value> = serde_json::from_slice(&cached.body.to_bytes()).expect("JSON");
        for tool in served {
            if let Some((slice, label)) = tool_slice(document, template, &tool) {
                ratios.push((minified(&tool) as f64 / slice as f64, label));
            }
        }
    }
    ratios
}
