//! `discover_since` against a real HALO server: the manifest with its entity tag, then a
//! body-less `304` while it is unchanged, a fresh manifest for a stale tag, and the tag
//! filter kept.

use crate::support;

use halo_client::Client;
use support::halo;

#[tokio::test]
async fn an_unchanged_manifest_costs_a_304() {
    let server = halo::Server::start().await;
    let client = Client::new(&server.base).unwrap();

    let first = client
        .discover_since(&[], None)
        .await
        .unwrap()
        .expect("no entity tag was given");
    assert!(!first.manifest.tools.is_empty());
    let etag = first.etag.clone().expect("the server tags its manifest");

    assert_eq!(client.discover_since(&[], Some(&etag)).await.unwrap(), None);
    let stale = client
        .discover_since(&[], Some("\"stale\""))
        .await
        .unwrap()
        .expect("a tag that no longer matches");
    assert_eq!(stale, first);

    // A filtered manifest is another representation, with a tag of its own.
    let admin = client
        .discover_since(&["admin"], Some(&etag))
        .await
        .unwrap()
        .expect("the filtered manifest differs");
    assert_eq!(admin.manifest.tools.len(), 1);
    assert_ne!(admin.etag.as_deref(), Some(etag.as_str()));

    let seen = server.discoveries();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[0].header("if-none-match"), None);
    assert_eq!(seen[1].header("if-none-match"), Some(etag.as_str()));
    assert_eq!((seen[1].status, seen[1].body_len), (304, Some(0)));
    assert_eq!(seen[3].uri, "/?tags=admin");
}
