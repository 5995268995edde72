//! An upstream's OpenAPI document: fetched, read (JSON or YAML) and its first server found.

use reqwest::Url;
use serde_json::Value;

use super::MAX_DOCUMENT_BYTES;
use crate::config::Location;

/// The document at `url`, within [`MAX_DOCUMENT_BYTES`].
pub(super) async fn fetch(client: &reqwest::Client, url: &Url) -> Result<Vec<u8>, String> {
    let shown = shown(url);
    let mut response = client
        .get(url.clone())
        .send()
        .await
        .map_err(|e| format!("cannot fetch {shown}: {}", without_url(&e)))?;
    if !response.status().is_success() {
        return Err(format!("{shown} answered {}", response.status()));
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| format!("cannot fetch {shown}: {}", without_url(&e)))?
    {
        if bytes.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(format!("{shown} is larger than {MAX_DOCUMENT_BYTES} bytes"));
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(bytes)
}

/// A URL as messages show it: without credentials or query (which may hold a key).
pub(crate) fn shown(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_query(None);
    shown.to_string()
}

/// A reqwest error's cause, without the URL it names (shown once, cleaned, by the caller).
pub(crate) fn without_url(error: &reqwest::Error) -> String {
    let mut cause = std::error::Error::source(error);
    let mut last = None;
    while let Some(error) = cause {
        last = Some(error.to_string());
        cause = error.source();
    }
    last.unwrap_or_else(|| {
        if error.is_timeout() {
            "timed out".to_owned()
        } else {
            "the request failed".to_owned()
        }
    })
}

/// The document in `bytes` (JSON or YAML; OpenAPI 3.0, 3.1, or Swagger 2.0 converted), and
/// what reading it changed.
pub(super) fn read(bytes: &[u8]) -> Result<(Value, Vec<String>), String> {
    let document = halo_openapi::Document::read(bytes).map_err(|e| e.to_string())?;
    let notes = document.notes().to_vec();
    Ok((document.into_json(), notes))
}

/// The document's first server, as an absolute URL (its variables at their defaults).
pub(super) fn first_server(document: &Value, location: &Location) -> Result<Url, String> {
    let missing = "the document names no absolute server URL: set `base_url`";
    let server = document
        .pointer("/servers/0")
        .ok_or_else(|| missing.to_owned())?;
    let mut url = server
        .get("url")
        .and_then(Value::as_str)
        .ok_or_else(|| missing.to_owned())?
        .to_owned();
    if let Some(Value::Object(variables)) = server.get("variables") {
        for (name, variable) in variables {
            if let Some(default) = variable.get("default").and_then(Value::as_str) {
                url = url.replace(&format!("{{{name}}}"), default);
            }
        }
    }
    let absolute = match (Url::parse(&url), location) {
        (Ok(url), _) => url,
        // A server relative to where the document was fetched from.
        (Err(_), Location::Url(base)) => base.join(&url).map_err(|_| missing.to_owned())?,
        (Err(_), Location::File(_)) => return Err(missing.to_owned()),
    };
    match absolute.scheme() {
        "http" | "https" => Ok(absolute),
        _ => Err(missing.to_owned()),
    }
}
