//! `OpenAiProvider` and `AnthropicProvider` side by side: the same scripted answer (200
//! text deltas, then one tool call whose arguments come in 10 pieces) served from a local
//! server in each API's wire format, and read to its end through `LlmProvider::chat`, with
//! both providers' default settings (timeouts on, retries unused).
//!
//! It prints, for each provider, the median time of one answer and its events per second
//! (the `ChatEvent`s it yields: one per text delta and the `Done` with the tool call, the
//! same 201 for both), then the ratio Anthropic / OpenAI. The two run turn about, the first
//! of each round alternating, so that load from other processes hits both alike; the
//! paired ratio is the median of each round's ratio.
//!
//! ```sh
//! cargo bench -p halo-agent --bench providers            # 2,000 rounds
//! cargo bench -p halo-agent --bench providers -- --rounds 500
//! ```
//!
//! Client and server share one thread (a current-thread runtime): no cross-thread wake-ups
//! in the figures. The server sends each event as a frame of its own, with no pause between
//! them and `TCP_NODELAY` set, so what is measured is the providers' own work: HTTP,
//! framing, JSON, assembly.

#[path = "../tests/common/anthropic.rs"]
#[allow(dead_code, unreachable_pub)]
mod anthropic;

use std::convert::Infallible;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anthropic::Reply;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::serve::{Listener as _, ListenerExt as _};
use futures_util::StreamExt as _;
use futures_util::stream;
use halo_agent::protocol::{Message, ToolCall};
use halo_agent::{
    AnthropicProvider, ChatEvent, ChatRequest, Completion, LlmProvider, OpenAiProvider,
};
use serde_json::{Value, json};

/// The answer's text: 800 characters, 200 deltas of 4.
fn text() -> String {
    "Dune is in stock; ".repeat(45)[..800].to_owned()
}

/// The tool call's arguments: 50 characters, 10 pieces of 5.
fn arguments() -> Value {
    let arguments = json!({"id": 7, "q": "dune by frank herbert, in paperback"});
    assert_eq!(arguments.to_string().len(), 50);
    arguments
}

/// The answer as OpenAI streams it (as `halo_tests::llm::ScriptedLlm` writes it): a role
/// chunk, the text in pieces of 4, the call's name, its arguments in pieces of 5, the
/// finish reason, the usage, `[DONE]`.
fn openai_events() -> Vec<String> {
    let choice = |delta: Value, finish: Option<&str>| {
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1_767_225_600,
               "model": "bench", "usage": null,
               "choices": [{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]})
    };
    let chars: Vec<char> = text().chars().collect();
    let arguments = arguments().to_string();
    let mut chunks = vec![choice(json!({"role": "assistant", "content": ""}), None)];
    chunks.extend(
        chars
            .chunks(4)
            .map(|piece| choice(json!({"content": piece.iter().collect::<String>()}), None)),
    );
    chunks.push(choice(
        json!({"tool_calls": [{"index": 0, "id": "call_lookup", "type": "function",
                               "function": {"name": "lookup", "arguments": ""}}]}),
        None,
    ));
    chunks.extend(arguments.as_bytes().chunks(5).map(|piece| {
        let piece = std::str::from_utf8(piece).unwrap();
        choice(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
            None,
        )
    }));
    chunks.push(choice(json!({}), Some("tool_calls")));
    chunks.push(
        json!({"id": "chatcmpl-bench", "object": "chat.completion.chunk",
                       "created": 1_767_225_600, "model": "bench", "choices": [],
                       "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}),
    );
    let mut events: Vec<String> = chunks
        .into_iter()
        .map(|chunk| format!("data: {chunk}\n\n"))
        .collect();
    events.push("data: [DONE]\n\n".to_owned());
    events
}

/// The answer as Anthropic streams it, from the tests' scripted server.
fn anthropic_events() -> Vec<String> {
    Reply::calls(Some(&text()), [("lookup", arguments())]).events()
}

/// An event stream of these frames, one per event.
fn stream_of(frames: Vec<Bytes>) -> Response {
    let body = stream::iter(frames.into_iter().map(Ok::<_, Infallible>));
    (
        [(header::CONTENT_TYPE, "text/event-stream")],
        Body::from_stream(body),
    )
        .into_response()
}

/// Each API's frames: OpenAI's, then Anthropic's.
type Frames = Arc<(Vec<Bytes>, Vec<Bytes>)>;

async fn openai(State(frames): State<Frames>) -> Response {
    stream_of(frames.0.clone())
}

async fn messages(State(frames): State<Frames>) -> Response {
    stream_of(frames.1.clone())
}

/// Serves `router` on a port of its own, with `TCP_NODELAY` as the APIs' servers send
/// (without it, the small frames of one answer wait on delayed acknowledgements: 40 ms an
/// answer on Linux); gives its base URL and the count of connections it accepted.
async fn serve(router: Router) -> (String, Arc<AtomicUsize>) {
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&connections);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a local port")
        .tap_io(move |tcp| {
            counted.fetch_add(1, Ordering::Relaxed);
            tcp.set_nodelay(true).expect("TCP_NODELAY");
        });
    let base_url = format!("http://{}", listener.local_addr().expect("its address"));
    tokio::spawn(async move { axum::serve(listener, router).await });
    (base_url, connections)
}

/// Reads one whole answer: the events, and the turn.
async fn read(provider: &dyn LlmProvider) -> (usize, Completion) {
    let request = ChatRequest::new(vec![Message::user("Is Dune in stock?")], vec![]);
    let mut answer = provider.chat(request);
    let mut events = 0;
    while let Some(event) = answer.next().await {
        events += 1;
        match event.expect("the scripted answer reads") {
            ChatEvent::Done(done) => return (events, done),
            other => {
                black_box(other);
            }
        }
    }
    panic!("the answer ended without Done")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn percentile(values: &mut [f64], share: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * share) as usize]
}

fn main() {
    let mut args = std::env::args().skip_while(|arg| arg != "--rounds").skip(1);
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(2000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime");
    runtime.block_on(async move {
        let to_bytes =
            |events: Vec<String>| events.into_iter().map(Bytes::from).collect::<Vec<_>>();
        let (openai_frames, anthropic_frames) = (openai_events(), anthropic_events());
        let wire = (
            openai_frames.len(),
            openai_frames.iter().map(String::len).sum::<usize>(),
            anthropic_frames.len(),
            anthropic_frames.iter().map(String::len).sum::<usize>(),
        );
        let router = Router::new()
            .route("/v1/chat/completions", post(openai))
            .route("/v1/messages", post(messages))
            .with_state(Arc::new((
                to_bytes(openai_frames),
                to_bytes(anthropic_frames),
            )));
        let (openai_url, openai_connections) = serve(router.clone()).await;
        let (anthropic_url, anthropic_connections) = serve(router).await;
        let openai = OpenAiProvider::builder()
            .base_url(format!("{openai_url}/v1"))
            .model("bench")
            .build()
            .expect("the OpenAI provider");
        let anthropic = AnthropicProvider::builder()
            .base_url(&anthropic_url)
            .model("bench")
            .build()
            .expect("the Anthropic provider");

        // Both read the same turn, in as many events.
        let (openai_count, openai_done) = read(&openai).await;
        let (anthropic_count, anthropic_done) = read(&anthropic).await;
        assert_eq!(openai_count, anthropic_count);
        assert_eq!(openai_done.content, anthropic_done.content);
        let call = |done: &Completion| {
            let ToolCall {
                name, arguments, ..
            } = &done.tool_calls[0];
            (name.clone(), arguments.clone())
        };
        assert_eq!(call(&openai_done), call(&anthropic_done));
        let events = openai_count;

        for _ in 0..rounds / 10 {
            read(&openai).await;
            read(&anthropic).await;
        }
        let mut openai_times = Vec::with_capacity(rounds);
        let mut anthropic_times = Vec::with_capacity(rounds);
        let mut ratios = Vec::with_capacity(rounds);
        let timed = async |provider: &dyn LlmProvider| {
            let started = Instant::now();
            black_box(read(provider).await);
            started.elapsed()
        };
        for round in 0..rounds {
            let (o, a): (Duration, Duration) = if round % 2 == 0 {
                let o = timed(&openai).await;
                (o, timed(&anthropic).await)
            } else {
                let a = timed(&anthropic).await;
                (timed(&openai).await, a)
            };
            openai_times.push(o.as_secs_f64());
            anthropic_times.push(a.as_secs_f64());
            ratios.push(a.as_secs_f64() / o.as_secs_f64());
        }
        let openai_median = median(&mut openai_times);
        let anthropic_median = median(&mut anthropic_times);
        let per_second = |seconds: f64| events as f64 / seconds;
        println!(
            "one answer: {events} ChatEvents (200 text deltas, 1 Done with one tool call); \
             {rounds} rounds"
        );
        println!(
            "  on the wire: OpenAI {} SSE events, {} bytes; Anthropic {} SSE events, {} bytes",
            wire.0, wire.1, wire.2, wire.3
        );
        println!(
            "OpenAiProvider:    median {:>8.1} µs an answer, {:>10.0} events/s",
            openai_median * 1e6,
            per_second(openai_median)
        );
        println!(
            "AnthropicProvider: median {:>8.1} µs an answer, {:>10.0} events/s",
            anthropic_median * 1e6,
            per_second(anthropic_median)
        );
        println!(
            "connections opened: OpenAiProvider {}, AnthropicProvider {}",
            openai_connections.load(Ordering::Relaxed),
            anthropic_connections.load(Ordering::Relaxed)
        );
        println!(
            "time Anthropic / OpenAI: {:.3} (medians), paired {:.3} (p10 {:.3}, p90 {:.3}); \
             events/s Anthropic / OpenAI: {:.3}",
            anthropic_median / openai_median,
            median(&mut ratios),
            percentile(&mut ratios, 0.1),
            percentile(&mut ratios, 0.9),
            openai_median / anthropic_median,
        );
    });
}
