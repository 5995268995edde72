//! `halo agent` against the bookstore and a scripted OpenAI-compatible model, over real
//! HTTP: the answer streamed to stdout, each tool call on stderr as it happens, `--json`
//! events, the LLM settings from flags or environment variables, and a clear error (not a
//! hang) when no model is configured; `--provider anthropic` against a scripted Messages
//! API server (halo-agent's, shared with its tests).

use std::time::{Duration, Instant};

use crate::common;

#[path = "../../halo-agent/tests/common/anthropic.rs"]
#[allow(dead_code, unreachable_pub)]
mod scripted_anthropic;

use bookstore::auth::READER_TOKEN;
use common::halo_with_env;
use halo_client::protocol::AgentEvent;
use halo_tests::llm::{Call, ScriptedLlm, Turn};
use halo_tests::spawn;
use scripted_anthropic::{Reply, ScriptedAnthropic};
use serde_json::json;

const LLM_KEY: &str = "sk-cli-test-key-42";
const ANTHROPIC_KEY: &str = "sk-ant-cli-test-key-77";

/// `halo agent` asking the bookstore at `base`, as its reader, which books by Le Guin it has
/// (among its tools tagged `books`), with the arguments `more` and the environment `env`.
fn ask_about_le_guin(base: &str, more: &[&str], env: &[(&str, &str)]) -> common::Run {
    let mut args = vec![
        "--bearer",
        READER_TOKEN,
        "agent",
        base,
        "Which books by Le Guin do you have?",
        "--tags",
        "books",
    ];
    args.extend(more);
    halo_with_env(&args, env)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_streams_and_each_tool_call_shows() {
    let store = spawn(bookstore::app()).await;
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new("search_books", json!({"q": "le guin"}))]),
        Turn::calls([Call::new("get_book", json!({"id": "two"}))]),
        Turn::text(
            "Two books by Ursula K. Le Guin:\nThe Left Hand of Darkness and A Wizard of Earthsea.",
        ),
    ])
    .await;
    let base = store.base_url();
    let run = ask_about_le_guin(
        &base,
        &["--llm-api-key", LLM_KEY],
        &[
            ("HALO_LLM_BASE_URL", &llm.base_url()),
            ("HALO_LLM_MODEL", "scripted-model"),
        ],
    );
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        run.stdout,
        "Two books by Ursula K. Le Guin:\nThe Left Hand of Darkness and A Wizard of Earthsea.\n"
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines[0], r#"-> search_books {"q":"le guin"}"#, "{run:#?}");
    assert_eq!(lines[1], "<- search_books: ok");
    assert_eq!(lines[2], r#"-> get_book {"id":"two"}"#);
    assert!(
        lines[3].starts_with("<- get_book: error 400 Bad Request ") && lines[3].contains("(/id: "),
        "{run:#?}"
    );
    assert_eq!(lines[4], "(3 turns, 45 tokens)");

    let requests = llm.requests();
    assert_eq!(requests[0].body["model"], "scripted-model");
    assert_eq!(
        requests[0].authorization(),
        Some(format!("Bearer {LLM_KEY}").as_str())
    );
    assert!(
        requests[0]
            .tool_names()
            .iter()
            .all(|name| name != "create_order")
    );
    assert!(
        !llm.transcript().contains(READER_TOKEN),
        "the API's token reached the model"
    );
    assert!(
        !format!("{run:?}").contains(LLM_KEY),
        "the LLM key was printed"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_prints_every_event_and_a_failed_run_exits_1() {
    let store = spawn(bookstore::app()).await;
    let looping = || Turn::calls([Call::new("get_book", json!({"id": 1}))]);
    let llm = ScriptedLlm::start([looping(), looping(), looping()]).await;
    let base = store.base_url();
    let run = halo_with_env(
        &[
            "--json",
            "agent",
            &base,
            "Loop",
            "--llm-base-url",
            &llm.base_url(),
            "--model",
            "m",
            "--max-turns",
            "2",
        ],
        &[],
    );
    assert_eq!(run.code, 1, "{run:#?}");
    let events: Vec<AgentEvent> = run
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    assert_eq!(events[0].name(), "agent_start");
    assert_eq!(events.iter().filter(|e| e.name() == "tool_end").count(), 2);
    let Some(AgentEvent::AgentError(failure)) = events.last() else {
        panic!("{run:#?}")
    };
    assert_eq!(failure.code.as_str(), "max_turns");
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn without_a_model_the_error_is_clear_and_immediate() {
    let store = spawn(bookstore::app()).await;
    let base = store.base_url();
    let started = Instant::now();
    let run = halo_with_env(&["agent", &base, "Is Dune in stock?"], &[]);
    assert!(started.elapsed() < Duration::from_secs(10), "{run:#?}");
    assert_eq!(run.code, 2, "{run:#?}");
    assert!(run.stdout.is_empty());
    for named in [
        "--llm-base-url",
        "HALO_LLM_BASE_URL",
        "--model",
        "HALO_LLM_MODEL",
    ] {
        assert!(run.stderr.contains(named), "{named}: {run:#?}");
    }

    // A model endpoint that cannot be reached: an error after the retries, not a hang. It
    // names the endpoint asked, without the key or the user and password of its URL.
    let port = halo_tests::closed_port();
    let started = Instant::now();
    let run = halo_with_env(
        &["agent", &base, "Is Dune in stock?", "--model", "m"],
        &[
            (
                "HALO_LLM_BASE_URL",
                &format!("http://someone:url-password@127.0.0.1:{port}/v1"),
            ),
            ("HALO_LLM_API_KEY", "sk-never-shown-4242"),
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(30), "{run:#?}");
    assert_eq!(run.code, 1, "{run:#?}");
    let endpoint = format!("http://127.0.0.1:{port}/v1/chat/completions");
    assert!(
        run.stderr
            .contains(&format!("could not connect to the model at {endpoint}: ")),
        "{run:#?}"
    );
    for secret in ["sk-never-shown-4242", "url-password", "someone"] {
        assert!(!run.stderr.contains(secret), "{secret}: {run:#?}");
        assert!(!run.stdout.contains(secret), "{secret}: {run:#?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn above_the_tool_budget_the_model_searches_then_calls() {
    let store = spawn(bookstore::app()).await;
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new(
            "search_tools",
            json!({"limit": 2, "query": "get one book by its id"}),
        )]),
        Turn::calls([Call::new(
            "call_tool",
            json!({"name": "get_book", "arguments": {"id": 1}}),
        )]),
        Turn::text("Book 1 is Dune."),
        Turn::text("Listed."),
    ])
    .await;
    let base = store.base_url();
    let model = [
        "--llm-base-url",
        &llm.base_url(),
        "--model",
        "m",
        "--tags",
        "books",
    ];
    let mut args = vec!["--bearer", READER_TOKEN, "agent", &base, "What is book 1?"];
    args.extend(model);
    args.extend(["--tool-budget", "700"]);
    let run = halo_with_env(&args, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "Book 1 is Dune.\n");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines[0].starts_with("halo: the ") && lines[0].contains("more than the budget of 700"),
        "{run:#?}"
    );
    assert_eq!(
        lines[1], r#"-> search_tools {"limit":2,"query":"get one book by its id"}"#,
        "{run:#?}"
    );
    assert_eq!(lines[2], "<- search_tools: ok");
    // A call through call_tool shows as the call of the tool it names.
    assert_eq!(lines[3], r#"-> get_book {"id":1}"#);
    assert_eq!(lines[4], "<- get_book: ok", "{run:#?}");
    let requests = llm.requests();
    assert_eq!(requests[0].tool_names(), ["search_tools", "call_tool"]);
    let found = requests[1].tool_names();
    assert!(
        found.len() > 2 && found.contains(&"get_book".to_owned()),
        "{found:?}"
    );

    // --all-tools: every tool, as before.
    let mut args = vec!["--bearer", READER_TOKEN, "agent", &base, "List."];
    args.extend(model);
    args.push("--all-tools");
    let run = halo_with_env(&args, &[]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert!(!run.stderr.contains("budget"), "{run:#?}");
    let listed = llm.requests()[3].tool_names();
    assert!(
        listed.contains(&"get_book".to_owned()) && !listed.contains(&"search_tools".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_anthropic_speaks_messages_with_the_key_of_anthropic_api_key() {
    let store = spawn(bookstore::app()).await;
    let llm = ScriptedAnthropic::start([
        Reply::calls(None, [("search_books", json!({"q": "le guin"}))]),
        Reply::text("Two books by Ursula K. Le Guin."),
        Reply::text("Hello."),
    ])
    .await;
    let base = store.base_url();
    let llm_base = llm.base_url();
    let model = [
        "--provider",
        "anthropic",
        "--model",
        "claude-scripted",
        "--llm-base-url",
        &llm_base,
    ];
    let run = ask_about_le_guin(&base, &model, &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(run.stdout, "Two books by Ursula K. Le Guin.\n");
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines[0], r#"-> search_books {"q":"le guin"}"#, "{run:#?}");
    assert_eq!(lines[1], "<- search_books: ok");
    assert_eq!(lines[2], "(2 turns, 30 tokens)");
    assert!(!format!("{run:?}").contains(ANTHROPIC_KEY));

    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    for sent in &requests {
        assert_eq!(sent.header("x-api-key"), Some(ANTHROPIC_KEY));
        assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(sent.body["model"], "claude-scripted");
        assert!(sent.body["system"].as_str().is_some_and(|s| !s.is_empty()));
        assert!(
            !format!("{:?} {}", sent.headers, sent.body).contains(READER_TOKEN),
            "the API's token reached the model"
        );
    }
    let messages = &requests[1].body["messages"];
    assert_eq!(messages[1]["content"][0]["type"], "tool_use");
    assert_eq!(messages[1]["content"][0]["input"], json!({"q": "le guin"}));
    assert_eq!(
        messages[2]["content"][0]["tool_use_id"],
        "toolu_0_search_books"
    );
    assert_eq!(messages[2]["content"][0]["type"], "tool_result");

    // --llm-api-key (or HALO_LLM_API_KEY) comes before ANTHROPIC_API_KEY.
    let mut args = vec![
        "agent",
        &base,
        "Hi",
        "--llm-api-key",
        "sk-ant-from-the-flag",
    ];
    args.extend(model);
    let run = halo_with_env(&args, &[("ANTHROPIC_API_KEY", ANTHROPIC_KEY)]);
    assert_eq!(run.code, 0, "{run:#?}");
    assert_eq!(
        llm.requests()[2].header("x-api-key"),
        Some("sk-ant-from-the-flag")
    );

    // Without a model: a clear error at once, naming what to set.
    let run = halo_with_env(&["agent", &base, "Hi", "--provider", "anthropic"], &[]);
    assert_eq!(run.code, 2, "{run:#?}");
    for named in ["--model", "HALO_LLM_MODEL", "ANTHROPIC_API_KEY"] {
        assert!(run.stderr.contains(named), "{named}: {run:#?}");
    }
}
