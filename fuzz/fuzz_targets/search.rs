//! Tool search and progressive disclosure read what callers and models send: `?q=` and
//! `limit`, `search_tools` and `call_tool` arguments, free text. None of it panics, and what
//! it answers holds its promises: limits kept, hits ranked and repeatable, brief texts no
//! longer than asked, token estimates linear in the text.
#![no_main]

use std::sync::LazyLock;

use halo_protocol::{
    CallRequest, Call, SearchQuery, SearchRequest, ToolCatalog, ToolEntry, ToolIndex, ToolSchema,
    brief_schema, brief_text, estimate_tokens, search_answer,
};
use libfuzzer_sys::fuzz_target;

/// A few tools with names, summaries, tags and paths of the shapes real APIs have.
static TOOLS: LazyLock<Vec<(ToolEntry, ToolSchema)>> = LazyLock::new(|| {
    [
        ("/repos/{owner}/{repo}/issues", "GET", "issues/list-for-repo", "List repository issues", "issues"),
        ("/repos/{owner}/{repo}/pulls", "POST", "pulls/create", "Create a pull request", "pulls"),
        ("/v1/customers/{customer}", "DELETE", "DeleteCustomersCustomer", "Delete a customer", "customers"),
        ("/2010-04-01/Accounts/{Sid}.json", "GET", "fetchAccount", "Fetch an account", "accounts"),
        ("/", "GET", "meta/root", "GitHub API Root", ""),
        ("/héllo/{wörld}", "PATCH", "ünïcode_tool", "Ändern Sie es 日本語", "ü"),
    ]
    .into_iter()
    .map(|(url, method, name, summary, tag)| {
        let entry = ToolEntry::new(url, method, name, summary).with_tags([tag]);
        (entry, ToolSchema::new(Call::new(method, url)))
    })
    .collect()
});

static INDEX: LazyLock<ToolIndex> =
    LazyLock::new(|| ToolIndex::new(TOOLS.iter().map(|(entry, schema)| (entry, Some(schema)))));

static CATALOG: LazyLock<ToolCatalog> = LazyLock::new(|| ToolCatalog::new(&TOOLS));

fuzz_target!(|data: &[u8]| {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };

    // `OPTIONS /?q=...&limit=...`
    if let Ok(Some(search)) = SearchQuery::from_query(Some(input)) {
        assert!(!search.q.is_empty() && search.q.trim() == search.q, "{search:?}");
        assert!((1..=100).contains(&search.limit), "{search:?}");
    }

    // The index, over the text as a query.
    let hits = INDEX.search(input, 3, |index| index != 1);
    assert!(hits.len() <= 3);
    assert!(hits.iter().all(|hit| hit.index != 1 && hit.index < TOOLS.len()));
    assert!(hits.iter().all(|hit| hit.score > 0.0));
    assert!(hits.windows(2).all(|pair| pair[0].score >= pair[1].score));
    assert_eq!(INDEX.search(input, 3, |index| index != 1), hits, "repeatable");

    // Token estimates are linear: at most one token per character.
    assert!(estimate_tokens(input) <= input.chars().count());

    // Brief texts are no longer than asked (and `…`).
    for max in [0, 1, 12, 160] {
        let brief = brief_text(input, max);
        assert!(brief.chars().count() <= max + 1, "{max}: {brief:?}");
    }

    // A model's arguments, when the text is JSON.
    if let Ok(arguments) = serde_json::from_str::<serde_json::Value>(input) {
        if let Ok(request) = SearchRequest::from_arguments(&arguments) {
            assert!((1..=100).contains(&request.limit));
            let (found, more) = CATALOG.search(&request);
            assert!(found.len() <= request.limit);
            let answer = search_answer(&found, more);
            assert_eq!(answer["tools"].as_array().map(Vec::len), Some(found.len()));
        }
        if let Ok(call) = CallRequest::from_arguments(&arguments) {
            assert!(!call.name.is_empty());
            assert!(call.arguments.is_null() || call.arguments.is_object());
        }
        if let serde_json::Value::Object(schema) = &arguments {
            let brief = brief_schema(schema);
            // Brief never adds keys.
            assert!(brief.len() <= schema.len());
        }
    }
});
