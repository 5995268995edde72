//! What checking bearer JWTs costs (`JwtAuthenticator`, feature `jwt`), against an issuer
//! played on loopback (`support/jwt_issuer.rs`: RSA 2048 and EC P-256 keys made at start-up,
//! discovery and key set served over HTTP). `JwtAuthenticator` remembers a verified token (by
//! its SHA-256, for `cache_ttl`, 60 s by default), so each JWT figure comes twice: **cached**,
//! the same token every call (a client reusing its access token: after the first call, a
//! digest and a lookup), and **cold**, an authenticator built with
//! `cache_ttl(Duration::ZERO)`, which checks the signature on every call. Each figure has a
//! baseline of the same run: `StaticAuthenticator` on a static bearer token.
//!
//! - `jwt_auth/*`: one `Authenticator::authenticate` in process, keys fetched (absolute
//!   times): `static_bearer` (the baseline), `rs256_cached`, `rs256_cold`, `es256_cold`.
//!   Target: ≤ 20 µs for RS256. `signature_rs256`, `signature_es256`: the signature check
//!   alone (aws-lc-rs, the public key parsed once), the floor of the cold figures.
//! - `jwt_auth_paired/*`: the same, measured alternating: `rs256_cached_vs_static`,
//!   `rs256_cold_vs_static`, `es256_cold_vs_static`; `rs256_cold_vs_signature`,
//!   `es256_cold_vs_signature` (the whole cold check / its signature check alone: what the
//!   header, the key lookup, the claims and the principal add).
//! - `jwt_http/*`: a governed GET tool (a rate and a deadline, both enforced, never reached,
//!   as in `execution`'s `govern_paired`, and a scope required) called over loopback HTTP,
//!   one call after the other: `governed_get_static` (the app with a `StaticAuthenticator`,
//!   a static token), `governed_get_rs256_cached`, `governed_get_rs256_cold` (the same app
//!   with either `JwtAuthenticator`, an RS256 token).
//! - `jwt_http_paired/*`: those calls alternating, against the static one:
//!   `governed_get_rs256_cached_vs_static` (target: ≤ 1.05), `governed_get_rs256_cold_vs_static`;
//!   `governed_get_long_static_vs_static`, a static token as long as the JWT (what the longer
//!   header costs by itself); `governed_get_static_vs_static`, the method's control (1.000
//!   when sound).
//! - The JWKS fetch bound (printed, not timed): 1,000 requests with tokens naming unknown
//!   `kid`s, 50 at a time over HTTP, against an authenticator whose refresh interval is 30 s:
//!   once right after the build (whose fetch is that interval's one), then in each of three
//!   later intervals (Tokio's clock moved on 30 s each time). Prints the key-set fetches the
//!   issuer served in each round; the bound is at most one per interval.
//!
//! Paired figures alternate baseline and candidate in rounds within every sample; criterion
//! prints the ratio as a time (`1.0300 µs` = 1.030). `python3 halo-axum/benches/ratios.py`
//! lists them.
//!
//! Run `cargo bench -p halo-axum --features jwt --bench jwt`.

#[path = "support/jwt_issuer.rs"]
mod jwt_issuer;
mod support;

use std::hint::black_box;
use std::time::{Duration, Instant};

use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED, ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256};
use axum::Json;
use axum::extract::Path;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use criterion::{Criterion, criterion_main};
use futures_util::StreamExt as _;
use halo_axum::{Authenticator, HaloLayer, JwtAuthenticator, Principal, StaticAuthenticator, halo};
use halo_tests::BearerScheme;
use http::header::AUTHORIZATION;
use http::request::Parts;
use http::{Request, StatusCode};
use jwt_issuer::{EC_KID, Issuer, RSA_KID};
use serde_json::{Value, json};
use support::{answered, paired, runtime, time};
use tokio::runtime::Runtime;
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

/// The static bearer token of the baseline.
const STATIC_TOKEN: &str = "bench-static-reader-token";
/// The reader's scope, which the governed tool requires.
const SCOPE: &str = "books:read";

/// Read a book (a rate and a deadline, both far from reached; the reader's scope).
#[halo(rate = "1000000/second", timeout_ms = 5000)]
#[utoipa::path(get, path = "/governed/{id}", params(("id" = u64, Path)),
    responses((status = 200)), security(("bearer" = ["books:read"])))]
async fn governed_book(Path(id): Path<u64>, caller: Principal) -> Json<Value> {
    Json(json!({"id": id, "title": "Dune", "reader": caller.id()}))
}

#[derive(OpenApi)]
#[openapi(info(title = "Bench", version = "1"), modifiers(&BearerScheme))]
struct Doc;

/// The bench API behind `authenticator`.
fn app(authenticator: impl Authenticator) -> axum::Router {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(governed_book))
        .split_for_parts();
    let layer = HaloLayer::builder(api)
        .authenticator(authenticator)
        .build()
        .expect("a layer");
    router.layer(layer)
}

fn static_authenticator() -> StaticAuthenticator {
    StaticAuthenticator::new().bearer(
        STATIC_TOKEN,
        Principal::new("reader-1").with_scopes([SCOPE]),
    )
}

/// The issuer's authenticators: one that remembers verified tokens (the default), one that
/// checks every token's signature every time.
fn jwt_authenticators(rt: &Runtime, issuer: &Issuer) -> (JwtAuthenticator, JwtAuthenticator) {
    rt.block_on(async {
        let cached = issuer.authenticator().build().await;
        let cold = issuer
            .authenticator()
            .cache_ttl(Duration::ZERO)
            .build()
            .await;
        (
            cached.expect("an authenticator"),
            cold.expect("an authenticator"),
        )
    })
}

/// The head of a request bearing `token`.
fn parts(token: &str) -> Parts {
    Request::builder()
        .uri("/governed/7")
        .header(AUTHORIZATION, format!("Bearer {token}"))
        .body(())
        .expect("a request")
        .into_parts()
        .0
}

/// The time `n` calls of `call` take, outside any runtime.
fn time_sync<T>(n: u64, call: impl Fn() -> T) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        black_box(call());
    }
    started.elapsed()
}

/// Asserts that `authenticator` takes the request bearing `token` as the reader.
fn assert_reader(rt: &Runtime, authenticator: &impl Authenticator, token: &str) {
    let principal = rt
        .block_on(authenticator.authenticate(&parts(token)))
        .expect("a valid token")
        .expect("a principal");
    assert_eq!(principal.id(), "reader-1");
    assert!(principal.has_scope(SCOPE));
}

fn in_process(c: &mut Criterion) {
    let rt = runtime();
    let issuer = rt.block_on(Issuer::start());
    let (cached, cold) = jwt_authenticators(&rt, &issuer);
    let fixed = static_authenticator();
    let rs256 = issuer.rs256(RSA_KID, "reader-1", SCOPE);
    let es256 = issuer.es256(EC_KID, "reader-1", SCOPE);
    assert_reader(&rt, &fixed, STATIC_TOKEN);
    // The cached authenticator's first call verifies the token; every later one finds it.
    assert_reader(&rt, &cached, &rs256);
    assert_reader(&rt, &cold, &rs256);
    assert_reader(&rt, &cold, &es256);
    let (static_parts, rs256_parts, es256_parts) =
        (parts(STATIC_TOKEN), parts(&rs256), parts(&es256));

    // The floor of the cold figures: the signature alone, the public key parsed once.
    let rsa_key = ParsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, issuer.rsa_public_der())
        .expect("an RSA public key");
    let ec_key = ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, issuer.ec_public_point())
        .expect("an EC public key");
    let signature = |token: &str, key: &ParsedPublicKey| {
        let (message, signature) = token.rsplit_once('.').expect("a JWS");
        let signature = URL_SAFE_NO_PAD.decode(signature).expect("base64url");
        key.verify_sig(message.as_bytes(), &signature)
            .expect("a valid signature");
    };
    signature(&rs256, &rsa_key);
    signature(&es256, &ec_key);

    let mut group = c.benchmark_group("jwt_auth");
    group.bench_function("static_bearer", |b| {
        b.iter_custom(|iters| time(&rt, iters, || fixed.authenticate(&static_parts)));
    });
    group.bench_function("rs256_cached", |b| {
        b.iter_custom(|iters| time(&rt, iters, || cached.authenticate(&rs256_parts)));
    });
    group.bench_function("rs256_cold", |b| {
        b.iter_custom(|iters| time(&rt, iters, || cold.authenticate(&rs256_parts)));
    });
    group.bench_function("es256_cold", |b| {
        b.iter_custom(|iters| time(&rt, iters, || cold.authenticate(&es256_parts)));
    });
    group.bench_function("signature_rs256", |b| {
        b.iter_custom(|iters| time_sync(iters, || signature(&rs256, &rsa_key)));
    });
    group.bench_function("signature_es256", |b| {
        b.iter_custom(|iters| time_sync(iters, || signature(&es256, &ec_key)));
    });
    group.finish();

    let mut group = c.benchmark_group("jwt_auth_paired");
    for (name, authenticator, request) in [
        ("rs256_cached_vs_static", &cached, &rs256_parts),
        ("rs256_cold_vs_static", &cold, &rs256_parts),
        ("es256_cold_vs_static", &cold, &es256_parts),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                paired(
                    iters,
                    |n| time(&rt, n, || fixed.authenticate(&static_parts)),
                    |n| time(&rt, n, || authenticator.authenticate(request)),
                )
            });
        });
    }
    for (name, token, key, request) in [
        ("rs256_cold_vs_signature", &rs256, &rsa_key, &rs256_parts),
        ("es256_cold_vs_signature", &es256, &ec_key, &es256_parts),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                paired(
                    iters,
                    |n| time_sync(n, || signature(token, key)),
                    |n| time(&rt, n, || cold.authenticate(request)),
                )
            });
        });
    }
    group.finish();
    assert_eq!(issuer.fetches(), 2, "only the builds fetched the key set");
}

/// `GET url` bearing `token`: the status, the body read.
async fn get(client: &reqwest::Client, url: &str, token: &str) -> StatusCode {
    answered(client.get(url).bearer_auth(token)).await
}

fn over_http(c: &mut Criterion) {
    let rt = runtime();
    let issuer = rt.block_on(Issuer::start());
    let (cached, cold) = jwt_authenticators(&rt, &issuer);
    let client = reqwest::Client::new();
    let rs256 = issuer.rs256(RSA_KID, "reader-1", SCOPE);
    // A static token as long as the JWT: what the longer header costs by itself.
    let long_static = "s".repeat(rs256.len());
    let fixed = static_authenticator().bearer(
        &long_static,
        Principal::new("reader-1").with_scopes([SCOPE]),
    );
    // The servers stop when dropped: kept to the end.
    let servers = rt.block_on(async {
        let fixed = halo_tests::spawn(app(fixed)).await;
        let cached = halo_tests::spawn(app(cached)).await;
        [fixed, cached, halo_tests::spawn(app(cold)).await]
    });
    let [static_url, cached_url, cold_url] = servers.each_ref().map(|s| s.url("/governed/7"));
    let unscoped = issuer.rs256(RSA_KID, "reader-1", "other");
    for (url, token) in [
        (&static_url, STATIC_TOKEN),
        (&static_url, long_static.as_str()),
        (&cached_url, rs256.as_str()),
        (&cold_url, rs256.as_str()),
    ] {
        let response = rt
            .block_on(client.get(url.as_str()).bearer_auth(token).send())
            .expect("an answer");
        assert_eq!(response.status(), StatusCode::OK);
        assert!(
            response.headers().contains_key("ratelimit"),
            "the rate is enforced"
        );
        // Without the scope: refused, so the scope is checked.
        if url != &static_url {
            assert_eq!(
                rt.block_on(get(&client, url, &unscoped)),
                StatusCode::FORBIDDEN
            );
        }
    }

    let mut group = c.benchmark_group("jwt_http");
    for (name, url, token) in [
        ("governed_get_static", &static_url, STATIC_TOKEN),
        ("governed_get_rs256_cached", &cached_url, rs256.as_str()),
        ("governed_get_rs256_cold", &cold_url, rs256.as_str()),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| time(&rt, iters, || get(&client, url, token)));
        });
    }
    group.finish();

    let mut group = c.benchmark_group("jwt_http_paired");
    for (name, url, token) in [
        (
            "governed_get_rs256_cached_vs_static",
            &cached_url,
            rs256.as_str(),
        ),
        (
            "governed_get_rs256_cold_vs_static",
            &cold_url,
            rs256.as_str(),
        ),
        (
            "governed_get_long_static_vs_static",
            &static_url,
            long_static.as_str(),
        ),
        ("governed_get_static_vs_static", &static_url, STATIC_TOKEN),
    ] {
        group.bench_function(name, |b| {
            b.iter_custom(|iters| {
                paired(
                    iters,
                    |n| time(&rt, n, || get(&client, &static_url, STATIC_TOKEN)),
                    |n| time(&rt, n, || get(&client, url, token)),
                )
            });
        });
    }
    group.finish();
    assert_eq!(issuer.fetches(), 2, "only the builds fetched the key set");
    drop(servers);
}

/// Requests per round of the fetch bound.
const FLOOD: usize = 1_000;
/// Requests in flight at once.
const IN_FLIGHT: usize = 50;
/// The authenticator's refresh interval.
const INTERVAL: Duration = Duration::from_secs(30);

/// Moves Tokio's clock on by `by` at once, then lets it run again (the servers use real
/// sockets, so the clock cannot stay paused). Needs the current-thread runtime.
async fn fast_forward(by: Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}

/// Sends a `GET` bearing each of `tokens`, `IN_FLIGHT` at a time: how many were `401`.
async fn flood(client: &reqwest::Client, url: &str, tokens: &[String]) -> usize {
    futures_util::stream::iter(tokens)
        .map(|token| get(client, url, token))
        .buffer_unordered(IN_FLIGHT)
        .filter(|status| std::future::ready(*status == StatusCode::UNAUTHORIZED))
        .count()
        .await
}

/// The key-set fetches that 1,000 requests with unknown `kid`s cause, per refresh interval.
/// Printed; criterion has no unit for it.
fn fetch_bound(_: &mut Criterion) {
    let rt = runtime();
    let issuer = rt.block_on(Issuer::start());
    let jwt = rt
        .block_on(issuer.authenticator().refresh_interval(INTERVAL).build())
        .expect("an authenticator");
    assert_eq!(issuer.fetches(), 1, "the build fetches the key set");
    let client = reqwest::Client::new();
    let server = rt.block_on(halo_tests::spawn(app(jwt)));
    let url = server.url("/governed/7");
    let rounds = 4;
    // Signed up front: every token names its own made-up key (RS256, ES256 alternately).
    let tokens: Vec<Vec<String>> = (0..rounds)
        .map(|round| {
            (0..FLOOD)
                .map(|i| {
                    let kid = format!("made-up-{round}-{i}");
                    if i % 2 == 0 {
                        issuer.rs256(&kid, "reader-1", SCOPE)
                    } else {
                        issuer.es256(&kid, "reader-1", SCOPE)
                    }
                })
                .collect()
        })
        .collect();
    println!(
        "jwt_fetch_bound: {FLOOD} requests per round with unknown kids, {IN_FLIGHT} in flight, \
         refresh interval {} s",
        INTERVAL.as_secs()
    );
    let mut counts = Vec::new();
    for (round, tokens) in tokens.iter().enumerate() {
        if round > 0 {
            rt.block_on(fast_forward(INTERVAL));
        }
        let before = issuer.fetches();
        let started = Instant::now();
        let refused = rt.block_on(flood(&client, &url, tokens));
        let elapsed = started.elapsed();
        let fetched = issuer.fetches() - before;
        assert_eq!(refused, FLOOD, "every unknown kid is refused");
        assert!(
            fetched <= 1,
            "round {round}: {fetched} fetches in one interval"
        );
        let when = if round == 0 {
            "the build's interval".to_owned()
        } else {
            format!("interval {round} after it")
        };
        println!(
            "jwt_fetch_bound/round_{round}: {fetched} key-set fetch(es) in {when}, \
             {refused}/{FLOOD} refused with 401, in {:.1} ms",
            elapsed.as_secs_f64() * 1e3
        );
        counts.push(fetched);
    }
    println!(
        "jwt_fetch_bound: {} fetches in total ({} including the build's) for {} requests over \
         {rounds} intervals; at most 1 per interval",
        counts.iter().sum::<usize>(),
        issuer.fetches(),
        FLOOD * rounds,
    );
}

// `criterion_group!` writes an undocumented `pub fn benches`.
#[allow(missing_docs)]
mod group {
    use super::{fetch_bound, in_process, over_http};

    criterion::criterion_group!(benches, fetch_bound, in_process, over_http);
}

criterion_main!(group::benches);
