//! Three `bookstore` replicas behind HAProxy (round robin, no stickiness: each answer says
//! which replica gave it) on a three-node Redis Cluster (`--redis-cluster`): what the layer
//! shares is shared exactly, whichever replica a request reaches; a stopped node makes keyed
//! calls fail closed, and once it is back the replicas recover without a restart. Each
//! replica keeps its own books and orders (the app's state, not the layer's). Needs
//! `redis-server` and `haproxy` (see `halo_tests::redis` and `halo_tests::haproxy`).

use crate::support;

use std::collections::BTreeSet;
use std::time::Duration;

use halo_tests::haproxy::Haproxy;
use halo_tests::redis_cluster::RedisCluster;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use rmcp::ServiceExt;
use rmcp::model::{CallToolRequestParams, CallToolResponse, GetTaskParams, TaskStatus};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use serde_json::{Value, json};
use support::process::Bookstore;
use support::weather_service::{Upstream, start_upstream};
use support::{ADMIN, events, send};

/// The replicas, and the load balancer in front of them.
struct Deployment {
    replicas: Vec<Bookstore>,
    front: Bookstore,
    _proxy: Haproxy,
}

/// Three bookstores on `cluster` (the first told by `--redis-cluster`, the others by
/// `HALO_REDIS_CLUSTER`), asking the weather at `weather`, behind HAProxy.
fn deploy(cluster: &RedisCluster, weather: &str) -> Deployment {
    let urls = cluster.urls().join(",");
    let replicas: Vec<Bookstore> = (0..3)
        .map(|index| {
            let weather = ["--weather-upstream", weather];
            if index == 0 {
                Bookstore::start(&[&["--redis-cluster", &urls][..], &weather].concat(), &[])
            } else {
                Bookstore::start(&weather, &[("HALO_REDIS_CLUSTER", &urls)])
            }
        })
        .collect();
    let backends: Vec<String> = replicas
        .iter()
        .map(|replica| replica.base().trim_start_matches("http://").to_owned())
        .collect();
    let proxy = Haproxy::start(&backends);
    Deployment {
        front: Bookstore::behind(proxy.url("")),
        replicas,
        _proxy: proxy,
    }
}

/// The replica that answered (`r0`, `r1`, `r2`).
fn replica(headers: &HeaderMap) -> String {
    headers["x-replica"].to_str().unwrap().to_owned()
}

fn replayed(headers: &HeaderMap) -> bool {
    headers
        .get("idempotent-replayed")
        .is_some_and(|value| value == "true")
}

/// Waits until `check` holds, at most `seconds`.
async fn eventually<F, Fut>(what: &str, seconds: u64, check: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    halo_tests::wait::eventually(what, Duration::from_secs(seconds), check).await;
}

/// The first value `look` gives, asked until it does, at most `seconds`.
async fn eventually_some<T, F, Fut>(what: &str, seconds: u64, look: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    halo_tests::wait::eventually_some(what, Duration::from_secs(seconds), look).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_behind_haproxy_share_what_the_layer_keeps() {
    let cluster = RedisCluster::start();
    let upstream = Upstream::default();
    let deployment = deploy(&cluster, &start_upstream(&upstream).await);
    let front = &deployment.front;

    // One charge budget (5 a minute), spent exactly, whichever replica counts.
    let mut seen = BTreeSet::new();
    for (order_id, left) in (1..=5).zip((0..5).rev()) {
        let (status, headers, body) = send(front.charge(order_id)).await;
        assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
        let ratelimit = headers["ratelimit"].to_str().unwrap();
        assert!(ratelimit.contains(&format!("r={left};")), "{ratelimit}");
        seen.insert(replica(&headers));
    }
    assert_eq!(seen.len(), 3, "round robin reached every replica");
    for _ in 0..3 {
        let (status, _, _) = send(front.charge(6)).await;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    }

    // An idempotency key: run once, replayed by the two others.
    let (status, first_headers, placed) = send(front.order("order-1", 1)).await;
    assert_eq!(status, StatusCode::CREATED, "{placed}");
    let mut replayers = BTreeSet::new();
    for _ in 0..2 {
        let (status, headers, again) = send(front.order("order-1", 1)).await;
        assert_eq!(status, StatusCode::CREATED);
        assert!(replayed(&headers), "{headers:?}");
        assert_eq!(again, placed);
        replayers.insert(replica(&headers));
    }
    assert!(!replayers.contains(&replica(&first_headers)));
    assert_eq!(replayers.len(), 2);

    // An approval: asked through one replica, listed by the next, approved through the third;
    // the held call runs once, on the replica that holds it.
    let reason = json!({"reason": "customer returned the book"});
    let (status, headers, held) =
        send(front.post("/api/payments/ch_404/refund").json(&reason)).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{held}");
    let location = headers["location"].to_str().unwrap().to_owned();
    let holder = replica(&headers);
    let (status, headers, list) = send(front.get("/.well-known/halo/approvals")).await;
    assert_eq!(status, StatusCode::OK, "{list}");
    let lister = replica(&headers);
    assert_eq!(list["approvals"][0]["id"], held["id"], "{list}");
    let (status, headers, decided) = send(front.post(&format!("{location}/approve"))).await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    assert_eq!(decided["state"], "approved");
    let approver = replica(&headers);
    assert_eq!(
        [&holder, &lister, &approver]
            .into_iter()
            .collect::<BTreeSet<_>>()
            .len(),
        3,
        "{holder} {lister} {approver}"
    );
    let answer = eventually_some("the held refund runs", 10, || async {
        let (_, _, approval) = send(front.get(&location)).await;
        Some(approval["response"].clone()).filter(|answer| !answer.is_null())
    })
    .await;
    // The handler ran, once: no charge ch_404 on the holder.
    assert_eq!(answer["status"], 404, "{answer}");
    let (status, _, _) = send(front.post(&format!("{location}/approve"))).await;
    assert_eq!(status, StatusCode::CONFLICT, "decided once");

    // A streamed call cut after its first event resumes through another replica: every
    // event once, in order.
    let summarize = || {
        front
            .post("/api/books/1/summarize")
            .header("accept", "text/event-stream")
    };
    let mut started = summarize()
        .json(&json!({"chapters": 8}))
        .send()
        .await
        .unwrap();
    assert_eq!(started.status(), StatusCode::OK);
    let call = started.headers()["halo-call-id"]
        .to_str()
        .unwrap()
        .to_owned();
    let runner = replica(started.headers());
    let mut head = String::new();
    while !head.contains("\n\n") {
        let chunk = started.chunk().await.unwrap().expect("a first event");
        head.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let head = &head[..head.find("\n\n").unwrap() + 2];
    drop(started);
    let last = head
        .lines()
        .find_map(|line| line.strip_prefix("id: "))
        .expect("the first event's id")
        .to_owned();
    let resumed = summarize()
        .header("halo-call-id", &call)
        .header("last-event-id", &last)
        .send()
        .await
        .unwrap();
    assert_eq!(resumed.status(), StatusCode::OK);
    assert_ne!(replica(resumed.headers()), runner, "resumed elsewhere");
    let rest = resumed.text().await.unwrap();
    let all = events(&format!("{head}{rest}"));
    let ids: Vec<u64> = halo_tests::sse::data_events(&format!("{head}{rest}"))
        .map(|block| block.field("id").unwrap().parse().unwrap())
        .collect();
    assert_eq!(
        ids,
        (1..=u64::try_from(all.len()).unwrap()).collect::<Vec<_>>()
    );
    assert_eq!(all.last().unwrap().name(), "tool_end", "{rest}");
    let progress = all
        .iter()
        .filter(|event| event.name() == "tool_progress")
        .count();
    assert_eq!(progress, 8, "each chapter once: {rest}");

    // A circuit opened through the replicas is open on all of them.
    upstream
        .failing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    let weather = || front.get("/api/weather?city=Porto");
    let mut status = StatusCode::OK;
    while status != StatusCode::SERVICE_UNAVAILABLE {
        status = send(weather()).await.0;
        // Opened by the fifth failure; each other replica, whose copy of the circuit was
        // still closed, lets one more call through and learns it from Redis.
        assert!(upstream.calls() <= 7, "the circuit did not open in time");
    }
    // Each replica reads the shared circuits every second.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    let calls = upstream.calls();
    let mut refusing = BTreeSet::new();
    for _ in 0..3 {
        let (status, headers, problem) = send(weather()).await;
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{problem}");
        refusing.insert(replica(&headers));
    }
    assert_eq!(refusing.len(), 3);
    assert_eq!(
        upstream.calls(),
        calls,
        "no replica called the failing service"
    );

    // MCP with no session affinity: the official SDK's client, each request balanced.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {ADMIN}").parse().unwrap());
    let http = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .unwrap();
    let transport = || {
        StreamableHttpClientTransport::with_client(
            http.clone(),
            StreamableHttpClientTransportConfig::with_uri(front.base().to_owned() + "/mcp"),
        )
    };
    let client = ().serve(transport()).await.expect("an MCP session through HAProxy");
    // The admin's tools cost more than the listing budget: search, then call through.
    let tools = client.list_all_tools().await.unwrap();
    assert!(tools.iter().any(|tool| tool.name == "search_tools"));
    for _ in 0..3 {
        let result = halo_tests::mcp::call_through(&client, "get_book", json!({"id": 1})).await;
        assert!(
            halo_tests::mcp::text(&result).contains("Dune"),
            "{result:?}"
        );
    }
    let _ = client.cancel().await;

    // MCP Tasks with no affinity: a held refund is a task that any replica reads (it names
    // the approval, kept in Redis), approved over HTTP, then completed: the call ran once.
    let tasking = halo_tests::mcp::Tasking::connect(transport()).await;
    let through = json!({"name": "refund_payment",
        "arguments": {"id": "ch_405", "reason": "customer returned the book"}});
    let Value::Object(through) = through else {
        unreachable!("an object")
    };
    let params = CallToolRequestParams::new("call_tool").with_arguments(through);
    let task = match tasking.peer().call_tool_once(params).await.unwrap() {
        CallToolResponse::Task(created) => created.task,
        other => panic!("not a task: {other:?}"),
    };
    assert_eq!(task.status, TaskStatus::Working);
    let approval = task
        .task_id
        .strip_prefix("approval-")
        .expect("the task names its approval")
        .to_owned();
    let read = || async {
        let params = GetTaskParams::new(task.task_id.clone());
        tasking.peer().get_task(params).await.unwrap().task
    };
    for _ in 0..3 {
        assert_eq!(read().await.status(), TaskStatus::Working);
    }
    let approve = front.post(&format!("/.well-known/halo/approvals/{approval}/approve"));
    let (status, _, decided) = send(approve).await;
    assert_eq!(status, StatusCode::OK, "{decided}");
    let done = eventually_some("the task completes", 10, || async {
        Some(read().await).filter(|task| task.status() != TaskStatus::Working)
    })
    .await;
    assert_eq!(done.status(), TaskStatus::Completed, "{done:?}");
    let (_, _, approval) =
        send(front.get(&format!("/.well-known/halo/approvals/{approval}"))).await;
    assert_eq!(
        approval["response"]["status"], 404,
        "ran once, no such charge: {approval}"
    );
    let _ = tasking.cancel().await;
    assert_eq!(deployment.replicas.len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_cluster_node_fails_calls_closed_and_the_replicas_recover_without_a_restart() {
    let mut cluster = RedisCluster::start();
    let upstream = Upstream::default();
    let deployment = deploy(&cluster, &start_upstream(&upstream).await);
    let front = &deployment.front;
    let ready = |replica: &Bookstore| replica.get("/ready").send();

    let (status, _, before) = send(front.order("before", 1)).await;
    assert_eq!(status, StatusCode::CREATED);
    cluster.node(1).stop();

    // Keyed orders are refused before they run (some may still find their slot's node
    // until the others count the stopped one as failed); every replica says it is not ready.
    let mut outcomes: Vec<(String, StatusCode, Value)> = Vec::new();
    let mut refused = BTreeSet::new();
    for attempt in 0.. {
        assert!(
            attempt < 200,
            "every replica refuses keyed orders within 20 s"
        );
        let key = format!("during-{attempt}");
        let (status, headers, body) = send(front.order(&key, 1)).await;
        assert!(
            [StatusCode::CREATED, StatusCode::SERVICE_UNAVAILABLE].contains(&status),
            "{status}: {body}"
        );
        if status == StatusCode::SERVICE_UNAVAILABLE {
            assert_eq!(headers["retry-after"], "1");
            refused.insert(replica(&headers));
        }
        outcomes.push((key, status, body));
        if refused.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for replica in &deployment.replicas {
        let answer = ready(replica).await.unwrap();
        assert_eq!(answer.status(), StatusCode::SERVICE_UNAVAILABLE);
    }

    // Back: every replica is ready again on its own; what ran is replayed, what was refused
    // runs now, once.
    cluster.start_stopped();
    for replica in &deployment.replicas {
        eventually("the replica is ready again", 20, || async {
            ready(replica).await.unwrap().status() == StatusCode::OK
        })
        .await;
    }
    outcomes.push(("before".to_owned(), StatusCode::CREATED, before));
    for (key, first, body) in outcomes {
        let (status, was_replayed, again) =
            eventually_some("the keyed order is answered", 10, || async {
                let (status, headers, again) = send(front.order(&key, 1)).await;
                (status != StatusCode::SERVICE_UNAVAILABLE)
                    .then(|| (status, replayed(&headers), again))
            })
            .await;
        assert_eq!(status, StatusCode::CREATED, "{key}: {again}");
        if first == StatusCode::CREATED {
            assert!(was_replayed, "{key} ran before: replayed, not run again");
            assert_eq!(again, body);
        } else {
            assert!(!was_replayed, "{key} never ran: it runs now");
        }
    }
}
