//! The sample agent binary against the bookstore and a scripted OpenAI-compatible model, over
//! real HTTP; and its clear error when no model is configured.

use std::process::Command;

use halo_tests::llm::{Call, ScriptedLlm, Turn};
use halo_tests::spawn;
use serde_json::json;

/// Runs the sample with `env` (and no other LLM or bookstore variables).
fn sample(env: &[(&str, &str)]) -> (i32, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_bookstore-agent"));
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
        .output()
        .expect("run the sample");
    (
        output.status.code().expect("an exit code"),
        String::from_utf8(output.stdout).unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_sample_answers_with_the_bookstores_read_tools() {
    let store = spawn(bookstore::app()).await;
    let llm = ScriptedLlm::start([
        Turn::calls([Call::new("search_books", json!({"author": "Le Guin"}))]),
        Turn::calls([
            Call::new("get_stock", json!({"sku": "9780441478125"})),
            Call::new("get_stock", json!({"sku": "9780547773742"})),
        ]),
        Turn::text("The Left Hand of Darkness: 5 copies; A Wizard of Earthsea: none."),
    ])
    .await;
    let (code, stdout, stderr) = sample(&[
        ("BOOKSTORE_URL", &store.base_url()),
        ("HALO_LLM_BASE_URL", &llm.base_url()),
        ("HALO_LLM_MODEL", "scripted"),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(
        stdout,
        "The Left Hand of Darkness: 5 copies; A Wizard of Earthsea: none.\n"
    );
    assert!(
        stderr.contains(r#"[calling search_books {"author":"Le Guin"}]"#),
        "{stderr}"
    );
    assert!(stderr.contains("[3 turns, 45 tokens]"), "{stderr}");

    let requests = llm.requests();
    // Only read tools are offered, though the default token may do everything.
    let offered = requests[0].tool_names();
    assert!(offered.contains(&"get_stock".to_owned()), "{offered:?}");
    for write in [
        "create_order",
        "charge_payment",
        "reserve_stock",
        "create_book",
    ] {
        assert!(!offered.contains(&write.to_owned()), "{write}: {offered:?}");
    }
    assert_eq!(
        requests[0].messages()[0]["content"],
        bookstore_agent::SYSTEM_PROMPT
    );
    assert_eq!(
        requests[0].messages()[1]["content"],
        bookstore_agent::DEFAULT_TASK
    );
    // The stock levels the model read came from the bookstore.
    let results = requests[2].messages();
    assert!(
        results[5]["content"]
            .as_str()
            .unwrap()
            .contains(r#""on_hand":5"#),
        "{results:#?}"
    );
    assert!(
        results[6]["content"]
            .as_str()
            .unwrap()
            .contains(r#""on_hand":0"#)
    );
    assert!(!llm.transcript().contains("demo-admin"));
}

#[test]
fn without_a_model_the_sample_says_what_to_set() {
    let (code, stdout, stderr) = sample(&[]);
    assert_eq!(code, 2);
    assert!(stdout.is_empty());
    for named in ["HALO_LLM_BASE_URL", "HALO_LLM_MODEL", "HALO_LLM_API_KEY"] {
        assert!(stderr.contains(named), "{stderr}");
    }
}
