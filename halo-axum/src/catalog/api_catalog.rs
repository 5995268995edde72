//! `GET /.well-known/api-catalog`: the API catalog of RFC 9727, written as a linkset
//! (RFC 9264).
//!
//! How the two RFCs shape the document:
//!
//! - RFC 9727 registers the well-known name and asks a publisher to answer `GET` there with
//!   the catalog and `HEAD` with a `Link` header of relation `api-catalog`; the layer sends
//!   that header with both (the target is the catalog itself). The catalog must be in the
//!   linkset JSON format, and the media type should carry the profile
//!   `https://www.rfc-editor.org/info/rfc9727` so a client can tell a catalog from any other
//!   linkset.
//! - A catalog must link to the API itself and is encouraged to link its descriptions and
//!   documentation. It does so with the relation `item` (RFC 6573) from the catalog to the
//!   API, and with the relations of RFC 8631 from the API to its `service-desc` (documents
//!   for machines) and `service-doc` (documents for people).
//! - RFC 9264's JSON format is an object whose only member is `linkset`, an array of link
//!   context objects. Each has an `anchor` (the link context) and one member per relation
//!   type, always an array of link target objects; a target has an `href` and optional
//!   `type` and `title`. Anchors and targets should be absolute, hence
//!   [`Catalogs::base_url`](super::Catalogs::base_url).
//!
//! So the catalog has two link contexts: the catalog, whose `item` is the API's base, and
//! the API's base, whose `service-desc` are the HALO manifest (fetched with `OPTIONS` and
//! `Accept: application/llm+json`, which its title says, since a link is normally followed
//! with `GET`) and the OpenAPI document when the application names it, and whose
//! `service-doc` are `/llms.txt` when served and the documentation page when named. It
//! names no tool, so it is the same for every caller and public.

use halo_protocol::MEDIA_TYPE;
use serde_json::{Value, json};

use super::{API_CATALOG_PATH, LLMS_TXT_PATH, Site};

/// The media type of the catalog: a linkset in JSON, profiled as an API catalog.
pub(super) const CONTENT_TYPE: &str =
    "application/linkset+json; profile=\"https://www.rfc-editor.org/info/rfc9727\"";

/// The catalog, serialised.
pub(super) fn render(site: &Site) -> Vec<u8> {
    let api = site.href("/");
    let mut descriptions = vec![json!({
        "href": api,
        "type": MEDIA_TYPE,
        "title": format!(
            "HALO manifest of {}: OPTIONS {api} with Accept: {MEDIA_TYPE} lists the tools; \
             OPTIONS on a tool's path gives its schema",
            site.name()
        ),
    })];
    if let Some(openapi) = &site.openapi {
        descriptions.push(json!({
            "href": openapi,
            "type": openapi_type(openapi),
            "title": format!("OpenAPI document of {}", site.name()),
        }));
    }
    let mut docs = Vec::new();
    if site.llms_txt {
        docs.push(json!({
            "href": site.href(LLMS_TXT_PATH),
            "type": super::llms_txt::MEDIA_TYPE,
            "title": format!("The tools of {} in Markdown, for language models", site.name()),
        }));
    }
    if let Some(page) = &site.docs {
        docs.push(json!({
            "href": page,
            "type": "text/html",
            "title": format!("Documentation of {}", site.name()),
        }));
    }
    let mut context = json!({"anchor": api, "service-desc": descriptions});
    if !docs.is_empty() {
        context["service-doc"] = Value::Array(docs);
    }
    let catalog = json!({
        "linkset": [
            {
                "anchor": site.href(API_CATALOG_PATH),
                "item": [{"href": api, "title": site.name()}],
            },
            context,
        ]
    });
    serde_json::to_vec(&catalog).unwrap_or_default()
}

/// The registered media type of an OpenAPI document, by its file name.
fn openapi_type(href: &str) -> &'static str {
    let path = href.split(['?', '#']).next().unwrap_or_default();
    if path.ends_with(".yaml") || path.ends_with(".yml") {
        "application/vnd.oai.openapi"
    } else {
        "application/vnd.oai.openapi+json"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openapi_types() {
        assert_eq!(openapi_type("/openapi.yaml"), "application/vnd.oai.openapi");
        assert_eq!(openapi_type("/spec.yml?v=1"), "application/vnd.oai.openapi");
        assert_eq!(
            openapi_type("/openapi.json"),
            "application/vnd.oai.openapi+json"
        );
    }
}
