//! The sample rig agent against the bookstore and a scripted OpenAI-compatible model, over
//! real HTTP on loopback: rig's OpenAI provider sends the bookstore's tools, the model calls
//! them, halo-client calls the bookstore with the token, the answers go back to the model;
//! above the budget the model searches then calls; a failed call is a tool error the model
//! reads; and the sample's clear error when no model is configured.

use std::process::Command;

use halo_tests::llm::{Call, ScriptedLlm, Turn};
use halo_tests::spawn;
use serde_json::{Value, json};

/// Runs the sample with `env` (and no other LLM or bookstore variables) and `args`.
fn sample(env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bookstore-rig-agent"));
    for name in [
        "HALO_LLM_BASE_URL",
        "HALO_LLM_MODEL",
        "HALO_LLM_API_KEY",
        "BOOKSTORE_URL",
        "BOOKSTORE_TOKEN",
    ] {
        command.env_remove(name);
    }
    let output = command
        .envs(env.iter().copied())
        .args(args)
        .output()
        .expect("run the sample");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

/// The text of the tool result messages of a request, in order.
fn tool_results(messages: &[Value]) -> Vec<String> {
    messages
        .iter()
        .filter(|message| message["role"] == "tool")
        .map(|message| match &message["content"] {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rig_agent_answers_with_the_bookstores_read_tools() {
    let store = spawn(bookstore::app()).await;
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new("search_books", json!({"author": "Le Guin"}))]),
        Turn::calls([
            Call::new("get_stock", json!({"sku": "9780441478125"})),
            Call::new("get_book", json!({"id": 999_999})),
        ]),
        Turn::text("The Left Hand of Darkness: 5 copies."),
    ])
    .await;
    let (code, stdout, stderr) = sample(
        &[
            ("BOOKSTORE_URL", &store.base_url()),
            ("HALO_LLM_BASE_URL", &llm.base_url()),
            ("HALO_LLM_MODEL", "scripted"),
        ],
        &["--tool-budget", "100000"],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(stdout, "The Left Hand of Darkness: 5 copies.\n");

    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    // Only read tools are offered, though the default token may do everything.
    let offered = requests[0].tool_names();
    assert!(offered.contains(&"get_stock".to_owned()), "{offered:?}");
    assert!(!offered.contains(&"create_order".to_owned()), "{offered:?}");
    assert_eq!(requests[0].body["model"], "scripted");
    // The search's answer came from the bookstore.
    let first = tool_results(requests[1].messages());
    assert_eq!(first.len(), 1);
    assert!(first[0].contains("Le Guin"), "{first:?}");
    // The stock level (the admin token's) and the missing book's problem, both read by the
    // model after the search's answer (each request carries the whole conversation).
    let second = tool_results(requests[2].messages());
    assert_eq!(second.len(), 3, "{second:?}");
    assert!(second[1].contains(r#""on_hand":5"#), "{second:?}");
    assert!(second[2].contains(r#""status":404"#), "{second:?}");
    assert!(!llm.transcript().contains("demo-admin"));
}

#[tokio::test(flavor = "multi_thread")]
async fn above_the_budget_the_rig_agent_searches_then_calls() {
    let store = spawn(bookstore::app()).await;
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new(
            "search_tools",
            json!({"query": "stock level of a book", "limit": 2}),
        )]),
        Turn::calls([Call::new(
            "call_tool",
            json!({"name": "get_stock", "arguments": {"sku": "9780441478125"}}),
        )]),
        Turn::text("5 copies."),
    ])
    .await;
    let (code, stdout, stderr) = sample(
        &[
            ("BOOKSTORE_URL", &store.base_url()),
            ("HALO_LLM_BASE_URL", &llm.base_url()),
            ("HALO_LLM_MODEL", "scripted"),
        ],
        &[
            "--tool-budget",
            "200",
            "What is the stock of 9780441478125?",
        ],
    );
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(stdout, "5 copies.\n");
    assert!(
        stderr.contains("offered as search_tools and call_tool"),
        "{stderr}"
    );

    let requests = llm.requests();
    for request in &requests {
        assert_eq!(request.tool_names(), ["search_tools", "call_tool"]);
    }
    let found = tool_results(requests[1].messages());
    assert!(found[0].contains(r#""name":"get_stock""#), "{found:?}");
    let called = tool_results(requests[2].messages());
    assert_eq!(called.len(), 2, "{called:?}");
    assert!(called[1].contains(r#""on_hand":5"#), "{called:?}");
}

#[test]
fn without_a_model_the_sample_says_what_to_set() {
    let (code, stdout, stderr) = sample(&[], &[]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    for named in ["HALO_LLM_BASE_URL", "HALO_LLM_MODEL", "HALO_LLM_API_KEY"] {
        assert!(stderr.contains(named), "{stderr}");
    }
}
