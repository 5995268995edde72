//! `halo stream` against an event-stream server (halo-client's test server, shared), over
//! real HTTP: events printed as they arrive, as text or one JSON object per line; exit 0 on
//! a 2xx `tool_end`, 1 on `tool_error` or an error answer, 2 when the server cannot be
//! reached; a cut stream resumed without a repeated event.

use crate::common;
use crate::sse;

use common::halo;
use serde_json::json;
use sse::{Cut, Proxy, Server};

#[tokio::test(flavor = "multi_thread")]
async fn events_are_printed_as_lines_and_the_result_in_full() {
    let server = Server::builder().progress(2).start().await;
    // The path describes one method: no need for -X.
    let run = halo(&["stream", &server.base, "/jobs", "--data", r#"{"pages": 2}"#]).expect(0);
    assert_eq!(
        run.stdout,
        concat!(
            "1 tool_start create_job (call c-1)\n",
            "2 progress step 1/2: step 1\n",
            "3 progress step 2/2: step 2\n",
            "4 tool_end 200 OK\n",
            "{\n  \"steps\": 2\n}\n",
        ),
        "{run:#?}"
    );
    assert!(run.stderr.is_empty(), "{run:#?}");
    assert_eq!(server.executions(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn json_prints_one_object_per_event() {
    let server = Server::builder().progress(1).start().await;
    let run = halo(&["--json", "stream", &server.base, "/reports", "-X", "get"]).expect(0);
    let lines = run.json_lines();
    assert_eq!(
        lines,
        [
            json!({"id": 1, "type": "tool_start", "data": {"call_id": "c-1", "tool": "get_report"}}),
            json!({"id": 2, "type": "tool_progress",
                   "data": {"step": 1, "total": 1, "message": "step 1"}}),
            json!({"id": 3, "type": "tool_end",
                   "data": {"status": 200, "content": {"steps": 1}, "meta": {"ms": 1}}}),
        ]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_error_exits_1() {
    let server = Server::builder().progress(0).failing().start().await;
    let run = halo(&["stream", &server.base, "/jobs"]).expect(1);
    assert_eq!(
        run.stdout,
        concat!(
            "1 tool_start create_job (call c-1)\n",
            "2 tool_error 503 Service Unavailable\n",
            "  detail:  the backend went away\n",
        ),
        "{run:#?}"
    );
    let json = halo(&["stream", &server.base, "/jobs", "--json"]).expect(1);
    assert_eq!(json.json_lines()[1]["type"], "tool_error");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_answer_before_the_stream_exits_1_with_its_problem() {
    let server = Server::builder().start().await;
    let run = halo(&["stream", &server.base, "/jobs", "-d", r#"{"reject": 422}"#]).expect(1);
    assert!(run.stdout.is_empty(), "{run:#?}");
    assert!(run.stderr.contains("422"), "{run:#?}");
    assert!(
        run.stderr.contains("rejected before the stream"),
        "{run:#?}"
    );
    assert_eq!(server.executions(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_and_network_errors_exit_2() {
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let run = halo(&["stream", &closed, "/jobs", "-X", "POST", "--timeout", "5"]).expect(2);
    assert!(run.stderr.starts_with("halo: "), "{run:#?}");
    let server = Server::builder().start().await;
    halo(&["stream", &server.base, "/jobs", "-d", "{not json"]).expect(2);
    assert_eq!(server.executions(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_stream_is_resumed_without_repeating_an_event() {
    let server = Server::builder().progress(4).start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut {
        events: 2,
        bytes: 12,
    }]);
    let run = halo(&["--json", "stream", &proxy.base, "/jobs"]).expect(0);
    let ids: Vec<u64> = run
        .json_lines()
        .iter()
        .map(|line| line["id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids, [1, 2, 3, 4, 5, 6]);
    assert_eq!(server.executions(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_server_that_does_not_stream_prints_one_tool_end() {
    let server = Server::builder().progress(1).plain().start().await;
    let run = halo(&["stream", &server.base, "/jobs"]).expect(0);
    assert_eq!(run.stdout, "1 tool_end 200 OK\n{\n  \"steps\": 1\n}\n");
}

#[test]
fn the_help_lists_stream() {
    let run = halo(&["--help"]).expect(0);
    assert!(run.stdout.contains("stream"), "{run:#?}");
    let run = halo(&["stream", "--help"]).expect(0);
    assert!(run.stdout.contains("text/event-stream"), "{run:#?}");
    assert!(run.stdout.contains("--data"), "{run:#?}");
}

/// Count aloud (the WebSocket test's tool).
#[utoipa::path(post, path = "/count", responses((status = 200, body = Object)))]
async fn count(progress: halo_axum::Progress) -> axum::Json<serde_json::Value> {
    for n in 1..=3 {
        progress.step(n, Some(3), format!("{n}"));
    }
    axum::Json(json!({"counted": 3}))
}

#[tokio::test(flavor = "multi_thread")]
async fn transport_ws_prints_the_same_events_as_sse() {
    use utoipa_axum::{router::OpenApiRouter, routes};
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(count))
        .split_for_parts();
    let layer = halo_axum::HaloLayer::builder(api).build().expect("a layer");
    let base = common::serve(layer.websocket_app(router.layer(layer.clone())));
    let lines = |transport: &str| {
        let run = halo(&[
            "--json",
            "stream",
            &base,
            "/count",
            "-X",
            "post",
            "--transport",
            transport,
        ])
        .expect(0);
        let mut lines = run.json_lines();
        lines[0]["data"]["call_id"] = serde_json::Value::Null;
        lines
    };
    let ws = lines("ws");
    assert_eq!(ws.len(), 5, "{ws:?}");
    assert_eq!(ws[4]["data"]["content"], json!({"counted": 3}));
    assert_eq!(ws, lines("sse"));
    // Not a transport.
    halo(&["stream", &base, "/count", "--transport", "pigeon"]).expect(2);
}
