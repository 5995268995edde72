//! The playground's page and files over real HTTP on loopback, nested under a mount path of
//! the app's choosing: media types, security headers, entity tags and `304`, the redirect to
//! the mount path's trailing slash, and problem answers for unknown files and methods. (The
//! page's behaviour in a browser is tested by `tests/tests/playground_browser.rs`.)

use axum::Json;
use axum::http::Uri;
use halo_axum::HaloLayer;
use halo_axum::playground::Playground;
use halo_tests::{TestServer, spawn};
use reqwest::StatusCode;
use reqwest::header::{
    CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ETAG, HeaderMap, IF_NONE_MATCH, LOCATION,
};
use serde_json::Value;
use utoipa_axum::{router::OpenApiRouter, routes};

/// Say hello.
#[utoipa::path(get, path = "/hello", tags = ["greetings", "read"],
               responses((status = 200, body = String)))]
async fn hello() -> Json<&'static str> {
    Json("hello")
}

/// An API with one tool and the playground at `/tools/playground`.
async fn serve(playground: Playground) -> TestServer {
    let (router, api) = OpenApiRouter::new()
        .routes(routes!(hello))
        .split_for_parts();
    let app = router
        .layer(HaloLayer::from_openapi(api))
        .nest_service("/tools/playground", playground);
    spawn(app).await
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client")
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> &'a str {
    headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header in {headers:?}"))
        .to_str()
        .expect("a visible ASCII header")
}

/// The headers every answer of the playground carries.
fn assert_hardened(headers: &HeaderMap) {
    let csp = header(headers, "content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self';",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} missing from {csp}");
    }
    assert!(!csp.contains("unsafe"), "{csp}");
    assert_eq!(header(headers, "x-content-type-options"), "nosniff");
    assert_eq!(header(headers, "referrer-policy"), "no-referrer");
    assert_eq!(header(headers, "x-frame-options"), "DENY");
}

#[tokio::test]
async fn the_page_and_its_files_are_served_under_the_mount_path() {
    let server = serve(Playground::new()).await;
    let client = no_redirects();

    let page = client
        .get(server.url("/tools/playground/"))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(
        header(page.headers(), "content-type"),
        "text/html; charset=utf-8"
    );
    assert_hardened(page.headers());
    assert_eq!(header(page.headers(), "cache-control"), "no-cache");
    assert!(header(page.headers(), "etag").starts_with('"'));
    let html = page.text().await.unwrap();
    // Relative links, so the page finds its files under any mount path.
    for link in [
        r#"<script type="module" src="playground.js"></script>"#,
        r#"<link rel="stylesheet" href="playground.css">"#,
        r#"href="favicon.svg""#,
        r#"<meta name="halo-api-base" content="/">"#,
    ] {
        assert!(html.contains(link), "{link} missing from the page");
    }
    // No inline script or style, and nothing fetched from elsewhere.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(!html.contains("style="), "an inline style");
    let handler = html.split(" on").skip(1).any(|rest| {
        let name: String = rest.chars().take_while(char::is_ascii_alphabetic).collect();
        !name.is_empty() && rest[name.len()..].starts_with('=')
    });
    assert!(!handler, "an inline event handler");
    assert!(!html.contains("//"), "a link to elsewhere");

    let index = client
        .get(server.url("/tools/playground/index.html"))
        .send()
        .await
        .unwrap();
    assert_eq!(index.status(), StatusCode::OK);
    assert_eq!(index.text().await.unwrap(), html);

    // The approvals panel: there, hidden until the credentials may list approvals.
    assert!(
        html.contains(r#"<section id="approvals" class="card" hidden>"#),
        "no hidden approvals panel in the page"
    );
    for id in ["approval-list", "approval-outcome", "approvals-refresh"] {
        assert!(
            html.contains(&format!(r#"id="{id}""#)),
            "no #{id} in the page"
        );
    }

    for (file, media_type) in [
        ("playground.js", "text/javascript; charset=utf-8"),
        ("approvals.js", "text/javascript; charset=utf-8"),
        ("playground.css", "text/css; charset=utf-8"),
        ("favicon.svg", "image/svg+xml"),
    ] {
        let answer = client
            .get(server.url(&format!("/tools/playground/{file}")))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK, "{file}");
        assert_eq!(header(answer.headers(), "content-type"), media_type);
        assert_hardened(answer.headers());
        assert_eq!(header(answer.headers(), "cache-control"), "no-cache");
        let length: usize = header(answer.headers(), "content-length").parse().unwrap();
        let body = answer.text().await.unwrap();
        assert_eq!(body.len(), length, "{file}");
        assert!(!body.contains("https://"), "{file} links elsewhere");
    }
    for file in ["playground.js", "approvals.js"] {
        let script = client
            .get(server.url(&format!("/tools/playground/{file}")))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        // API text reaches the page as text only.
        assert!(!script.contains("innerHTML"), "{file} writes HTML");
        assert!(!script.contains("outerHTML") && !script.contains("insertAdjacentHTML"));
        assert!(!script.contains("localStorage") && !script.contains("sessionStorage"));
        // The page's one script loads the approvals by a relative URL, like its other files.
        if file == "playground.js" {
            assert!(script.contains("from './approvals.js';"), "{file}");
        } else {
            assert!(script.contains("'/.well-known/halo/approvals'"), "{file}");
        }
    }

    // The API beside it is untouched: discovery still answers at the root.
    let manifest: Value = halo_tests::discover(&server.url("/"), None).await;
    assert_eq!(manifest["tools"][0]["name"], "hello");
}

#[tokio::test]
async fn the_mount_path_without_its_slash_is_redirected_to_it() {
    let server = serve(Playground::new()).await;
    let answer = no_redirects()
        .get(server.url("/tools/playground"))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(header(answer.headers(), LOCATION.as_str()), "playground/");
    assert_hardened(answer.headers());

    let answer = no_redirects()
        .get(server.url("/tools/playground?x=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        header(answer.headers(), LOCATION.as_str()),
        "playground/?x=1"
    );

    // A browser (or reqwest) following it lands on the page.
    let followed = reqwest::get(server.url("/tools/playground")).await.unwrap();
    assert_eq!(followed.status(), StatusCode::OK);
    assert_eq!(followed.url().path(), "/tools/playground/");
    assert!(followed.text().await.unwrap().contains("HALO playground"));
}

#[tokio::test]
async fn an_unknown_file_or_method_is_a_problem() {
    let server = serve(Playground::new()).await;
    let client = no_redirects();
    for path in [
        "/tools/playground/nope.js",
        "/tools/playground/playground.js/",
        "/tools/playground/assets/playground.js",
        "/tools/playground/..%2FCargo.toml",
    ] {
        let answer = client.get(server.url(path)).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{path}");
        assert_eq!(
            header(answer.headers(), CONTENT_TYPE.as_str()),
            "application/problem+json"
        );
        assert_hardened(answer.headers());
        let problem: Value = answer.json().await.unwrap();
        assert_eq!(problem["status"], 404, "{path}");
        assert_eq!(problem["detail"], "the playground has no such file");
    }

    for method in [
        reqwest::Method::POST,
        reqwest::Method::DELETE,
        reqwest::Method::OPTIONS,
    ] {
        let answer = client
            .request(method.clone(), server.url("/tools/playground/"))
            .header("accept", "application/llm+json")
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::METHOD_NOT_ALLOWED, "{method}");
        assert_eq!(header(answer.headers(), "allow"), "GET, HEAD");
        assert_eq!(
            header(answer.headers(), CONTENT_TYPE.as_str()),
            "application/problem+json"
        );
        let problem: Value = answer.json().await.unwrap();
        assert_eq!(problem["status"], 405);
    }
}

#[tokio::test]
async fn a_file_the_browser_holds_is_not_sent_again() {
    let server = serve(Playground::new()).await;
    let client = no_redirects();
    let url = server.url("/tools/playground/playground.css");
    let first = client.get(&url).send().await.unwrap();
    let etag = header(first.headers(), ETAG.as_str()).to_owned();
    let css = first.text().await.unwrap();

    for held in [
        etag.clone(),
        format!("W/{etag}"),
        format!("\"other\", {etag}"),
        "*".to_owned(),
    ] {
        let again = client
            .get(&url)
            .header(IF_NONE_MATCH, &held)
            .send()
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::NOT_MODIFIED, "{held}");
        assert_eq!(header(again.headers(), ETAG.as_str()), etag);
        assert_eq!(header(again.headers(), CACHE_CONTROL.as_str()), "no-cache");
        assert_hardened(again.headers());
        assert!(again.bytes().await.unwrap().is_empty());
    }

    let changed = client
        .get(&url)
        .header(IF_NONE_MATCH, "\"0000000000000000\"")
        .send()
        .await
        .unwrap();
    assert_eq!(changed.status(), StatusCode::OK);
    assert_eq!(changed.text().await.unwrap(), css);

    // The page's tag differs from its files', and is stable.
    let page = client
        .get(server.url("/tools/playground/"))
        .send()
        .await
        .unwrap();
    let page_etag = header(page.headers(), ETAG.as_str()).to_owned();
    assert_ne!(page_etag, etag);
    let again = client
        .get(server.url("/tools/playground/"))
        .send()
        .await
        .unwrap();
    assert_eq!(header(again.headers(), ETAG.as_str()), page_etag);
}

#[tokio::test]
async fn head_gives_the_headers_without_the_body() {
    let server = serve(Playground::new()).await;
    let client = no_redirects();
    let url = server.url("/tools/playground/playground.js");
    let get = client.get(&url).send().await.unwrap();
    let length = header(get.headers(), CONTENT_LENGTH.as_str()).to_owned();
    let head = client.head(&url).send().await.unwrap();
    assert_eq!(head.status(), StatusCode::OK);
    assert_eq!(header(head.headers(), CONTENT_LENGTH.as_str()), length);
    assert_eq!(
        header(head.headers(), CONTENT_TYPE.as_str()),
        "text/javascript; charset=utf-8"
    );
    assert_hardened(head.headers());
    assert!(head.bytes().await.unwrap().is_empty());
}

#[tokio::test]
async fn the_page_is_told_where_the_api_is() {
    let server = serve(Playground::new().api_base(Uri::from_static("/v1/"))).await;
    let html = reqwest::get(server.url("/tools/playground/"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(html.contains(r#"<meta name="halo-api-base" content="/v1/">"#));

    let server =
        serve(Playground::new().api_base(Uri::from_static("https://api.example.com:8443/v1?q=1")))
            .await;
    let page = reqwest::get(server.url("/tools/playground/"))
        .await
        .unwrap();
    let csp = header(page.headers(), "content-security-policy").to_owned();
    assert!(
        csp.contains("connect-src 'self' https://api.example.com:8443;"),
        "{csp}"
    );
    let html = page.text().await.unwrap();
    assert!(
        html.contains(r#"<meta name="halo-api-base" content="https://api.example.com:8443/v1">"#)
    );
}
