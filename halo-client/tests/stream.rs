//! Streamed calls over real HTTP: events arrive whole and in order; a stream cut part-way is
//! resumed with `Last-Event-ID` + `Halo-Call-Id`, each event delivered once and the tool run
//! once; refusals, plain answers and errors before the stream keep their status and problem;
//! a request that is not safe to repeat is never sent twice; keep-alives and unknown events
//! are skipped; the attempt timeout never cuts a stream, silence does; and credentials still
//! go to their own host only.

use crate::support;

use std::time::Duration;

use futures_util::StreamExt as _;
use halo_client::protocol::{ToolEvent, ToolSchema};
use halo_client::{Client, Credential, Credentials, Method, StreamEvent};
use serde_json::{Value, json};
use support::authority;
use support::sse::{Cut, Proxy, Server};

const TOKEN: &str = "tok-s7r3am";

fn client(base: &str) -> Client {
    Client::builder(base)
        .retry(support::fast_retry())
        .timeout(Some(Duration::from_secs(5)))
        .build()
        .unwrap()
}

/// Every item of a call's stream (errors as their messages).
async fn collect(
    client: &Client,
    url: &str,
    method: Method,
    args: Value,
) -> Vec<Result<StreamEvent, String>> {
    let stream = client.invoke_stream(url, method, args).await.unwrap();
    stream
        .map(|item| item.map_err(|e| e.to_string()))
        .collect()
        .await
}

/// The ids and names of events.
fn outline(events: &[Result<StreamEvent, String>]) -> Vec<(u64, &'static str)> {
    events
        .iter()
        .map(|event| {
            let event = event.as_ref().unwrap_or_else(|e| panic!("{e}: {events:?}"));
            (event.id(), event.event().name())
        })
        .collect()
}

/// `tool_start`, `progress` progress events, `tool_end`, ids from 1.
fn whole_call(progress: u64) -> Vec<(u64, &'static str)> {
    let mut expected = vec![(1, "tool_start")];
    expected.extend((2..progress + 2).map(|id| (id, "tool_progress")));
    expected.push((progress + 2, "tool_end"));
    expected
}

#[tokio::test]
async fn a_stream_arrives_whole_and_in_order() {
    let server = Server::builder().progress(3).start().await;
    let client = client(&server.base);
    let events = collect(&client, "/jobs", Method::POST, json!({"pages": 3})).await;
    assert_eq!(outline(&events), whole_call(3));
    let events: Vec<ToolEvent> = events
        .into_iter()
        .map(|e| e.unwrap().into_event())
        .collect();
    match &events[0] {
        ToolEvent::ToolStart(start) => {
            assert_eq!(start.call_id, "c-1");
            assert_eq!(start.tool, "create_job");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        events[1],
        ToolEvent::ToolProgress(json!({"step": 1, "total": 3, "message": "step 1"}))
    );
    match &events[4] {
        ToolEvent::ToolEnd(end) => {
            assert_eq!(end.status, 200);
            assert_eq!(end.content, json!({"steps": 3}));
            assert_eq!(end.meta, Some(json!({"ms": 1})));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.executions(), 1);
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("accept"), Some("text/event-stream"));
    assert_eq!(requests[0].header("last-event-id"), None);
}

#[tokio::test]
async fn result_drains_the_stream_to_tool_end() {
    let server = Server::builder().progress(2).start().await;
    let client = client(&server.base);
    let end = client
        .invoke_stream("/reports", Method::GET, json!({"year": 2026}))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(end.status, 200);
    assert_eq!(end.content, json!({"steps": 2}));
    assert_eq!(server.requests()[0].uri, "/reports?year=2026");
}

#[tokio::test]
async fn a_cut_stream_is_resumed_and_each_event_arrives_once() {
    let server = Server::builder().progress(6).start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut {
        events: 3,
        bytes: 10,
    }]);
    let client = client(&proxy.base);
    let events = collect(&client, "/jobs", Method::POST, json!({"pages": 6})).await;
    assert_eq!(outline(&events), whole_call(6));
    assert_eq!(server.executions(), 1, "resuming runs nothing");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let resumed = &requests[1];
    assert_eq!(resumed.method, "POST");
    assert_eq!(resumed.header("last-event-id"), Some("3"));
    assert_eq!(resumed.header("halo-call-id"), Some("c-1"));
    assert_eq!(resumed.header("accept"), Some("text/event-stream"));
    assert_eq!(
        resumed.header("content-type"),
        requests[0].header("content-type")
    );
}

#[tokio::test]
async fn replayed_events_are_not_yielded_twice() {
    let server = Server::builder().progress(4).replay_all().start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(4)]);
    let client = client(&proxy.base);
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(outline(&events), whole_call(4));
    assert_eq!(server.executions(), 1);
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn reconnections_are_counted_afresh_after_each_new_event() {
    let server = Server::builder().progress(5).start().await;
    let proxy = Proxy::start(server.addr).await;
    // Four drops, each after at least one new event, with one reconnection allowed per drop.
    proxy.cut([
        Cut::after(2),
        Cut::after(1),
        Cut {
            events: 1,
            bytes: 7,
        },
        Cut::after(2),
    ]);
    let client = Client::builder(&proxy.base)
        .retry(support::fast_retry().max_attempts(2))
        .build()
        .unwrap();
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(outline(&events), whole_call(5));
    let requests = server.requests();
    let last_ids: Vec<Option<&str>> = requests.iter().map(|r| r.header("last-event-id")).collect();
    assert_eq!(last_ids, [None, Some("2"), Some("3"), Some("4"), Some("6")]);
    assert_eq!(server.executions(), 1);
}

#[tokio::test]
async fn reconnections_without_new_events_are_bounded() {
    let server = Server::builder().progress(5).start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(2), Cut::after(0), Cut::after(0), Cut::after(0)]);
    let client = Client::builder(&proxy.base)
        .retry(support::fast_retry().max_attempts(3))
        .build()
        .unwrap();
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(
        outline(&events[..2]),
        [(1, "tool_start"), (2, "tool_progress")]
    );
    assert_eq!(events.len(), 3, "{events:?}");
    let error = events[2].as_ref().unwrap_err();
    assert!(error.contains("POST /jobs"), "{error}");
    // The first request and two reconnections, as three attempts allow.
    assert_eq!(server.requests().len(), 3);
    assert_eq!(server.executions(), 1);
}

#[tokio::test]
async fn a_refused_resumption_ends_the_stream_with_its_status() {
    let server = Server::builder().progress(4).forgetful().start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(2)]);
    let client = client(&proxy.base);
    let mut stream = client
        .invoke_stream("/jobs", Method::POST, json!({}))
        .await
        .unwrap();
    assert_eq!(stream.next().await.unwrap().unwrap().id(), 1);
    assert_eq!(stream.next().await.unwrap().unwrap().id(), 2);
    let error = stream.next().await.unwrap().unwrap_err();
    assert!(error.is_status(), "{error:?}");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(410));
    let problem = error.problem().expect("the problem body");
    assert_eq!(
        problem.detail.as_deref(),
        Some("this call is no longer kept")
    );
    assert!(
        stream.next().await.is_none(),
        "the stream ends after an error"
    );
    assert_eq!(server.requests().len(), 2, "a refusal is final");
}

#[tokio::test]
async fn a_server_that_does_not_stream_gives_one_tool_end() {
    let server = Server::builder().progress(1).plain().start().await;
    let client = client(&server.base);
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event = events[0].as_ref().unwrap();
    assert_eq!(event.id(), 1);
    match event.event() {
        ToolEvent::ToolEnd(end) => {
            assert_eq!(end.status, 200);
            assert_eq!(end.content, json!({"steps": 1}));
            assert_eq!(end.meta, None);
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn an_error_before_the_stream_keeps_status_and_problem() {
    let server = Server::builder().start().await;
    let client = client(&server.base);
    let error = client
        .invoke_stream("/jobs", Method::POST, json!({"reject": 422}))
        .await
        .unwrap_err();
    assert!(error.is_status(), "{error:?}");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(422));
    assert_eq!(
        error.problem().and_then(|p| p.detail).as_deref(),
        Some("rejected before the stream")
    );
    assert!(error.to_string().contains("POST /jobs"), "{error}");
    assert_eq!(server.executions(), 0);
}

#[tokio::test]
async fn a_drop_before_tool_start_is_an_error_for_a_post() {
    let server = Server::builder().start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(0)]);
    let client = client(&proxy.base);
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let error = events[0].as_ref().unwrap_err();
    assert!(error.contains("POST /jobs"), "{error}");
    // Sending it again could have run the job twice.
    assert_eq!(server.requests().len(), 1);
    assert_eq!(server.executions(), 1);
}

#[tokio::test]
async fn a_drop_before_tool_start_is_retried_for_a_get() {
    let server = Server::builder().start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(0)]);
    let client = client(&proxy.base);
    let events = collect(&client, "/reports", Method::GET, json!({})).await;
    assert_eq!(outline(&events), whole_call(2));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // Without a call id there is nothing to resume: the request is sent as it was.
    assert_eq!(requests[1].header("halo-call-id"), None);
    assert_eq!(requests[1].header("last-event-id"), None);
    match events[0].as_ref().unwrap().event() {
        ToolEvent::ToolStart(start) => assert_eq!(start.call_id, "c-2"),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn keep_alive_comments_are_skipped_and_keep_a_slow_stream_open() {
    let server = Server::builder()
        .progress(2)
        .every(Duration::from_millis(300))
        .keep_alive(Duration::from_millis(40))
        .start()
        .await;
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .stream_idle_timeout(Some(Duration::from_millis(150)))
        .build()
        .unwrap();
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(outline(&events), whole_call(2));
    assert_eq!(server.requests().len(), 1, "never silent, never resumed");
}

#[tokio::test]
async fn events_of_other_kinds_are_skipped() {
    let server = Server::builder().progress(3).unknown_events().start().await;
    let client = client(&server.base);
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(
        outline(&events),
        [
            (1, "tool_start"),
            (3, "tool_progress"),
            (5, "tool_progress"),
            (7, "tool_progress"),
            (8, "tool_end")
        ]
    );
}

#[tokio::test]
async fn a_tool_error_ends_the_stream_and_is_the_result() {
    let server = Server::builder().progress(1).failing().start().await;
    let client = client(&server.base);
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(
        outline(&events),
        [(1, "tool_start"), (2, "tool_progress"), (3, "tool_error")]
    );
    let error = client
        .invoke_stream("/jobs", Method::POST, json!({}))
        .await
        .unwrap()
        .result()
        .await
        .unwrap_err();
    assert!(error.is_status(), "{error:?}");
    assert_eq!(error.status().map(|s| s.as_u16()), Some(503));
    assert_eq!(
        error.problem().and_then(|p| p.detail).as_deref(),
        Some("the backend went away")
    );
    assert!(error.to_string().contains("POST /jobs"), "{error}");
}

#[tokio::test]
async fn the_attempt_timeout_does_not_cut_a_long_stream() {
    let server = Server::builder()
        .progress(6)
        .every(Duration::from_millis(80))
        .start()
        .await;
    // The whole call takes about 560 ms, each gap 80 ms.
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .timeout(Some(Duration::from_millis(250)))
        .build()
        .unwrap();
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(outline(&events), whole_call(6));
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test]
async fn a_silent_stream_is_resumed() {
    let server = Server::builder()
        .progress(3)
        .stall_after(2, Duration::from_secs(3))
        .start()
        .await;
    let client = Client::builder(&server.base)
        .retry(support::fast_retry())
        .stream_idle_timeout(Some(Duration::from_millis(200)))
        .build()
        .unwrap();
    let started = std::time::Instant::now();
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(outline(&events), whole_call(3));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[1].header("last-event-id"), Some("2"));
    assert_eq!(server.executions(), 1);
}

#[tokio::test]
async fn credentials_go_to_their_own_host_only() {
    let server = Server::builder().progress(3).start().await;
    let other = Server::builder().progress(1).start().await;
    let proxy = Proxy::start(server.addr).await;
    proxy.cut([Cut::after(2)]);
    let client = Client::builder(&proxy.base)
        .retry(support::fast_retry())
        .credentials(Credentials::new().with(authority(&proxy.base), Credential::bearer(TOKEN)))
        .build()
        .unwrap();
    let events = collect(&client, "/jobs", Method::POST, json!({})).await;
    assert_eq!(outline(&events), whole_call(3));
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(request.header("authorization"), Some("Bearer tok-s7r3am"));
    }

    // A schema whose call goes to another host gets no credential there.
    let schema: ToolSchema = serde_json::from_value(json!({
        "call": {"method": "GET", "url": format!("{}/reports", other.base)}
    }))
    .unwrap();
    let end = client
        .call_stream(&schema, json!({}))
        .await
        .unwrap()
        .result()
        .await
        .unwrap();
    assert_eq!(end.content, json!({"steps": 1}));
    let requests = other.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].header("authorization"), None);
}

#[test]
fn a_tool_stream_can_move_between_tasks() {
    fn send_unpin_stream<T: Send + Unpin + futures_core::Stream>() {}
    send_unpin_stream::<halo_client::ToolStream>();
}
