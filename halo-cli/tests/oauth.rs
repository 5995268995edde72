//! `--oauth-issuer`: the `halo` binary, given only an issuer, a client id and a secret, finds
//! the token endpoint and the API's resource and calls an API that accepts JWTs from a real
//! authorization server (node's `oidc-provider`, `halo_tests::oidc`).
#![allow(missing_docs)]

use crate::books_api;
use crate::common;

use halo_tests::oidc::{CLIENT_ID, CLIENT_SECRET};
use serde_json::json;

use self::common::{Run, halo_with_env};

/// `halo ARGS` with the client's secret in the environment, off the runtime's threads.
async fn halo(args: Vec<String>) -> Run {
    tokio::task::spawn_blocking(move || {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        halo_with_env(&args, &[("HALO_OAUTH_CLIENT_SECRET", CLIENT_SECRET)])
    })
    .await
    .expect("halo runs")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_is_enough_to_call_a_protected_operation() {
    let (server, base) = books_api::books_api().await;
    let issuer = server.issuer().to_owned();
    let flags = |more: &[&str]| -> Vec<String> {
        ["--oauth-issuer", &issuer, "--oauth-client-id", CLIENT_ID]
            .iter()
            .chain(more)
            .map(|arg| (*arg).to_owned())
            .collect()
    };

    let run = halo(flags(&[
        "--oauth-scope",
        "books:read",
        "call",
        &base,
        "/books",
        "-X",
        "GET",
        "--json",
    ]))
    .await
    .expect(0);
    assert_eq!(
        run.json(),
        json!({"caller": CLIENT_ID, "scopes": ["books:read"]}),
        "{run:#?}"
    );
    assert!(!run.stderr.contains(CLIENT_SECRET), "{run:#?}");

    // The resource named on the command line: the same, without the API's metadata.
    let run = halo(flags(&[
        "--oauth-resource",
        &base,
        "--oauth-scope",
        "books:write",
        "call",
        &base,
        "/books",
        "-X",
        "POST",
    ]))
    .await;
    assert_eq!(run.code, 0, "{run:#?}");

    // `--oauth-issuer` instead of `--oauth-token-url`, never both.
    let token_url = format!("{issuer}/token");
    let mut both = flags(&["--oauth-token-url", &token_url]);
    both.extend(["discover".to_owned(), base.clone()]);
    let run = halo(both).await.expect(2);
    assert!(run.stderr.contains("cannot be used with"), "{run:#?}");
    // An issuer in clear text is refused before anything is sent.
    let run = halo(vec![
        "--oauth-issuer".into(),
        "http://id.example".into(),
        "--oauth-client-id".into(),
        CLIENT_ID.into(),
        "discover".into(),
        base.clone(),
    ])
    .await
    .expect(2);
    assert!(run.stderr.contains("https"), "{run:#?}");
}
