//! Unit tests of the export of tools as OpenAI and Anthropic tool definitions.

use super::*;
use halo_protocol::{Call, InputField, Location};
use serde_json::json;

fn tool(name: &str, method: &str, url: &str) -> (ToolEntry, ToolSchema) {
    (
        ToolEntry::new(url, method, name, format!("{name} summary")),
        ToolSchema::new(Call::new(method, url)),
    )
}

#[test]
fn openai_shape() {
    let (entry, mut schema) = tool("create_book", "POST", "/api/books");
    schema.description = "Add a book.".into();
    schema.input.insert(
        "title".into(),
        InputField::new(json!({"type": "string", "maxLength": 200}))
            .located(Location::Body)
            .required(true),
    );
    schema.input.insert(
        "Idempotency-Key".into(),
        InputField::new(json!({"type": "string"})).located(Location::Header),
    );
    let tools = export_tools(&[(entry, schema)], ToolFormat::OpenAi);
    assert_eq!(
        tools,
        [json!({
            "type": "function",
            "function": {
                "name": "create_book",
                "description": "Add a book.",
                "parameters": {
                    "type": "object",
                    "properties": {
                        "title": {"type": "string", "maxLength": 200},
                        "Idempotency-Key": {"type": "string"}
                    },
                    "required": ["title"],
                    "additionalProperties": false
                }
            }
        })]
    );
}

#[test]
fn anthropic_shape_without_inputs_or_description() {
    let (mut entry, schema) = tool("ping", "GET", "/ping");
    entry.description = String::new();
    let tools = export_tools(&[(entry, schema)], ToolFormat::Anthropic);
    assert_eq!(
        tools,
        [json!({
            "name": "ping",
            "input_schema": {"type": "object", "properties": {}, "required": [],
                             "additionalProperties": false}
        })]
    );
}

#[test]
fn description_is_why_then_description() {
    let description = |entry: &ToolEntry, schema: &ToolSchema| {
        let tools = export_tools(&[(entry.clone(), schema.clone())], ToolFormat::Anthropic);
        tools[0]["description"].as_str().map(str::to_owned)
    };
    let (entry, mut schema) = tool("a", "GET", "/a");
    assert_eq!(description(&entry, &schema).unwrap(), "a summary");
    schema.why = Some("Use first".into());
    assert_eq!(
        description(&entry, &schema).unwrap(),
        "Use first\n\na summary"
    );
    schema.description = "Full text.".into();
    assert_eq!(
        description(&entry, &schema).unwrap(),
        "Use first\n\nFull text."
    );
    let mut bare = entry;
    bare.description = String::new();
    schema.description = String::new();
    assert_eq!(description(&bare, &schema).unwrap(), "Use first");
    schema.why = None;
    assert_eq!(description(&bare, &schema), None, "left out when empty");
}

#[test]
fn names_are_valid_and_unique() {
    let long = "x".repeat(80);
    let tools: Vec<(ToolEntry, ToolSchema)> = [
        "get book",
        "get_book",
        "get-book!",
        "get book",
        "",
        "???",
        "ünïcode name",
        long.as_str(),
        long.as_str(),
    ]
    .iter()
    .map(|name| tool(name, "GET", "/x"))
    .collect();
    let names: Vec<String> = export_tools(&tools, ToolFormat::Anthropic)
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    let long_2 = format!("{}_2", "x".repeat(62));
    assert_eq!(
        names,
        [
            "get_book",
            "get_book_2",
            "get-book",
            "get_book_3",
            "tool",
            "tool_2",
            "n_code_name",
            &"x".repeat(64),
            &long_2,
        ]
    );
    let unique: std::collections::HashSet<&String> = names.iter().collect();
    assert_eq!(unique.len(), names.len());
    for name in &names {
        assert!((1..=64).contains(&name.len()), "{name}");
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "{name}"
        );
    }
}

/// `n` tools tagged with a domain (every third tagged `pets`, the others `books`, the
/// last untagged), each with an optional and a required input.
fn many(n: usize) -> Vec<(ToolEntry, ToolSchema)> {
    (0..n)
        .map(|i| {
            let url = format!("/things/{i}");
            let tags: Vec<&str> = match (i + 1 == n, i % 3) {
                (true, _) => vec!["read"],
                (false, 0) => vec!["pets", "read"],
                _ => vec!["read", "books"],
            };
            let entry = ToolEntry::new(
                url.as_str(),
                "GET",
                format!("get_thing_{i}"),
                format!("Get thing number {i}"),
            )
            .with_tags(tags);
            let mut schema = ToolSchema::new(Call::new("GET", url.as_str()));
            schema.input.insert(
                "id".into(),
                InputField::new(json!({"type": "integer"}))
                    .located(Location::Query)
                    .required(true),
            );
            schema.input.insert(
                "fields".into(),
                InputField::new(json!({"type": "string", "maxLength": 20}))
                    .located(Location::Query),
            );
            (entry, schema)
        })
        .collect()
}

#[test]
fn openai_loads_at_most_128_functions() {
    let options = ExportOptions::new(ToolFormat::OpenAi).budget(usize::MAX);
    let fits = options.export(&many(128)).unwrap();
    assert_eq!(fits.tools.len(), 128);
    assert!(!fits.deferred);
    assert_eq!(fits.selected, (0..128).collect::<Vec<_>>());
    let error = options.export(&many(129)).unwrap_err();
    let ExportError::TooMany {
        tools, max_tools, ..
    } = error.clone()
    else {
        panic!("{error}");
    };
    assert_eq!((tools, max_tools), (129, OPENAI_MAX_TOOLS));
    assert!(error.to_string().contains("129 tools"), "{error}");
    // Selected explicitly, they fit.
    let first = options.clone().max(10).export(&many(300)).unwrap();
    assert_eq!(first.selected, (0..10).collect::<Vec<_>>());
    let found = options
        .clone()
        .query("thing 42")
        .max(3)
        .export(&many(300))
        .unwrap();
    assert_eq!(found.tools[0]["function"]["name"], "get_thing_42");
    assert_eq!(found.selected[0], 42);
    // The token budget counts too.
    let small = ExportOptions::new(ToolFormat::OpenAi).budget(100);
    assert!(matches!(
        small.export(&many(20)),
        Err(ExportError::TooMany { tools: 20, .. })
    ));
    assert!(small.max(1).export(&many(20)).is_ok());
    // Never deferring is the same for OpenAI.
    assert!(options.defer(Defer::Never).export(&many(129)).is_err());
}

#[test]
fn openai_defers_in_namespaces_by_domain_tag() {
    let exported = ExportOptions::new(ToolFormat::OpenAi)
        .defer(Defer::Always)
        .export(&many(200))
        .unwrap();
    assert!(exported.deferred);
    let tools = &exported.tools;
    assert_eq!(
        tools.len(),
        4,
        "two namespaces, one loose function, the search tool"
    );
    assert_eq!(tools[0]["type"], "namespace");
    assert_eq!(tools[0]["name"], "pets");
    assert_eq!(tools[1]["name"], "books");
    let description = tools[0]["description"].as_str().unwrap();
    assert!(
        description.starts_with("67 tools tagged `pets`: get_thing_0, get_thing_3"),
        "{description}"
    );
    assert!(
        description.len() < 900 && description.contains("more"),
        "{description}"
    );
    let function = &tools[0]["tools"][0];
    assert_eq!(
        function,
        &json!({
            "type": "function",
            "name": "get_thing_0",
            "description": "Get thing number 0",
            "parameters": {
                "type": "object",
                "properties": {"id": {"type": "integer"},
                               "fields": {"type": "string", "maxLength": 20}},
                "required": ["id"],
                "additionalProperties": false
            },
            "defer_loading": true
        })
    );
    let in_namespaces: usize = tools[..2]
        .iter()
        .map(|namespace| namespace["tools"].as_array().unwrap().len())
        .sum();
    assert_eq!(in_namespaces, 199);
    assert_eq!(tools[2]["name"], "get_thing_199");
    assert_eq!(tools[2]["defer_loading"], true);
    assert_eq!(tools[3], json!({"type": "tool_search"}));
    // Strict deferred functions say so.
    let strict = ExportOptions::new(ToolFormat::OpenAi)
        .defer(Defer::Always)
        .strict(true)
        .export(&many(2))
        .unwrap();
    assert_eq!(strict.tools[0]["tools"][0]["strict"], true);
}

#[test]
fn openai_strict_functions() {
    let exported = ExportOptions::new(ToolFormat::OpenAi)
        .strict(true)
        .export(&many(1))
        .unwrap();
    let function = &exported.tools[0]["function"];
    assert_eq!(function["strict"], true);
    // `required` follows the properties' order, which follows serde_json's map.
    let mut parameters = function["parameters"].clone();
    if let Some(Value::Array(required)) = parameters.get_mut("required") {
        required.sort_unstable_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    assert_eq!(
        parameters,
        json!({
            "type": "object",
            "properties": {
                "id": {"type": "integer"},
                "fields": {"type": ["string", "null"],
                           "description": "(at most 20 characters)"}
            },
            "required": ["fields", "id"],
            "additionalProperties": false
        })
    );
    assert!(exported.not_strict.is_empty());
    // A schema beyond strict mode's limits is exported as it is, and named.
    let (entry, mut schema) = tool("wide", "POST", "/wide");
    let properties: Map<String, Value> = (0..5_001)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect();
    schema.input.insert(
        "body".into(),
        InputField::new(json!({"type": "object", "properties": properties}))
            .located(Location::Body),
    );
    let wide = ExportOptions::new(ToolFormat::OpenAi)
        .strict(true)
        .budget(usize::MAX)
        .export(&[(entry, schema)])
        .unwrap();
    assert_eq!(wide.tools[0]["function"]["strict"], false);
    assert_eq!(wide.not_strict[0].0, "wide");
    assert!(
        wide.not_strict[0].1.contains("5002"),
        "{:?}",
        wide.not_strict
    );
    // Anthropic has no such option.
    let error = ExportOptions::new(ToolFormat::Anthropic)
        .strict(true)
        .export(&many(1))
        .unwrap_err();
    assert!(matches!(error, ExportError::Invalid(_)), "{error}");
}

#[test]
fn anthropic_defers_above_the_budget() {
    let small = ExportOptions::new(ToolFormat::Anthropic)
        .export(&many(3))
        .unwrap();
    assert!(!small.deferred);
    assert_eq!(small.tools, export_tools(&many(3), ToolFormat::Anthropic));
    assert!(small.tokens < DEFAULT_TOOL_BUDGET);

    let large = ExportOptions::new(ToolFormat::Anthropic)
        .export(&many(300))
        .unwrap();
    assert!(large.deferred && large.tokens > DEFAULT_TOOL_BUDGET);
    assert_eq!(
        large.tools[0],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    assert_eq!(large.tools.len(), 301);
    assert!(
        large.tools[1..]
            .iter()
            .all(|tool| tool["defer_loading"] == true)
    );
    assert!(
        large.tools[0].get("defer_loading").is_none(),
        "the search tool is loaded"
    );

    let never = ExportOptions::new(ToolFormat::Anthropic)
        .defer(Defer::Never)
        .export(&many(300))
        .unwrap();
    assert!(!never.deferred && never.tools.len() == 300);
    let always = ExportOptions::new(ToolFormat::Anthropic)
        .defer(Defer::Always)
        .export(&many(2))
        .unwrap();
    assert!(always.deferred && always.tools.len() == 3);
    let budget = ExportOptions::new(ToolFormat::Anthropic)
        .budget(10)
        .export(&many(2))
        .unwrap();
    assert!(budget.deferred);
}

#[test]
fn names_stay_whichever_tools_are_selected() {
    let tools: Vec<(ToolEntry, ToolSchema)> = ["get book", "get_book", "get-book"]
        .iter()
        .map(|name| tool(name, "GET", "/x"))
        .collect();
    let exported = ExportOptions::new(ToolFormat::Anthropic)
        .query("get_book")
        .export(&tools)
        .unwrap();
    let names: Vec<&str> = exported
        .selected
        .iter()
        .zip(&exported.tools)
        .map(|(_, tool)| tool["name"].as_str().unwrap())
        .collect();
    let all = export_tools(&tools, ToolFormat::Anthropic);
    for (position, name) in exported.selected.iter().zip(names) {
        assert_eq!(all[*position]["name"], name);
    }
    for bad in [
        ExportOptions::new(ToolFormat::OpenAi).query("  "),
        ExportOptions::new(ToolFormat::OpenAi).max(0),
    ] {
        assert!(matches!(bad.export(&tools), Err(ExportError::Invalid(_))));
    }
}
