//! Upstreams: each one's description fetched and read (an OpenAPI document, or a HALO API's
//! discovery), and the base URL its calls go to.

pub(crate) mod document;
mod halo;

use reqwest::Url;
use serde_json::Value;

use crate::config::{Location, Source, UpstreamSpec};
use crate::error::Error;

/// The largest description fetched (halo-openapi's reader refuses more): GitHub's, among the
/// largest public ones, is about 11 MB.
pub(crate) const MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;

/// An upstream's description, read.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// Its OpenAPI document (3.1 form).
    pub(crate) document: Value,
    /// Where its calls go.
    pub(crate) base_url: Url,
    /// What reading the document changed (a Swagger 2.0 document converted, ...).
    pub(crate) notes: Vec<String>,
    /// For a HALO upstream, the client its streamed calls go through (resumed, their
    /// progress relayed).
    pub(crate) halo: Option<halo_client::Client>,
}

/// Fetches and reads `spec`'s description.
pub(crate) async fn load(spec: &UpstreamSpec, client: &reqwest::Client) -> Result<Loaded, Error> {
    let fail = |message: String| Error::upstream(&spec.name, message);
    let location = match &spec.source {
        Source::OpenApi(location) => location,
        Source::Halo(base) => {
            let document = halo::document(base, spec).await.map_err(fail)?;
            let base_url = spec.base_url.clone().unwrap_or_else(|| base.clone());
            let halo = halo::client(&base_url, spec).map_err(fail)?;
            return Ok(Loaded {
                document,
                base_url,
                notes: Vec::new(),
                halo: Some(halo),
            });
        }
    };
    let bytes = match location {
        Location::File(path) => {
            let meta = tokio::fs::metadata(path)
                .await
                .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?;
            if meta.len() > MAX_DOCUMENT_BYTES as u64 {
                return Err(fail(format!(
                    "{} is larger than {MAX_DOCUMENT_BYTES} bytes",
                    path.display()
                )));
            }
            tokio::fs::read(path)
                .await
                .map_err(|e| fail(format!("cannot read {}: {e}", path.display())))?
        }
        Location::Url(url) => document::fetch(client, url).await.map_err(fail)?,
    };
    let (document, notes) = document::read(&bytes).map_err(fail)?;
    let base_url = match &spec.base_url {
        Some(url) => url.clone(),
        None => document::first_server(&document, location).map_err(fail)?,
    };
    Ok(Loaded {
        document,
        base_url,
        notes,
        halo: None,
    })
}
