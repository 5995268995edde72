//! An app served on a loopback port, reached over HTTP as a client would reach it.

use std::net::SocketAddr;

/// Serves `app` on a free loopback port until the test ends; its base URL.
pub async fn serve(app: axum::Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// `OPTIONS` of `path` under `base`, asking for HALO discovery.
pub async fn discover(base: &str, path: &str) -> reqwest::Response {
    reqwest::Client::new()
        .request(reqwest::Method::OPTIONS, format!("{base}{path}"))
        .header("accept", "application/llm+json")
        .send()
        .await
        .unwrap()
}
