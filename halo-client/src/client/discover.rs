//! Discovery and description: the manifest (`OPTIONS /`), the schemas of each path, and
//! their cache, revalidated with `If-None-Match` once stale.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::{StreamExt, TryStreamExt, stream};
use halo_protocol::{MEDIA_TYPE, Manifest, ToolEntry, ToolSchema};
use reqwest::header::{ACCEPT, CACHE_CONTROL, ETAG, HeaderMap, HeaderValue, IF_NONE_MATCH, VARY};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use tokio::time::Instant;

use super::{Client, Prepared, parse_method};
use crate::{Error, Result, ToolResponse};

/// Schemas by the path text they were asked for; hashed with foldhash, since every
/// `invoke` looks here first.
pub(super) type SchemaCache = HashMap<String, Cached, foldhash::fast::RandomState>;

/// The schemas of one path, with what is needed to revalidate them.
#[derive(Clone)]
pub(super) struct Cached {
    schemas: Arc<Vec<ToolSchema>>,
    etag: Option<HeaderValue>,
    fresh_until: Instant,
}

/// A manifest and the entity tag it was served with (see [`Client::discover_since`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Discovered {
    /// The manifest.
    pub manifest: Manifest,
    /// Its `ETag`, for the next [`Client::discover_since`].
    pub etag: Option<String>,
    /// Its `Cache-Control`: how long it stays fresh, and for whom.
    pub cache_control: Option<String>,
    /// Its `Vary`: what else it depends on (`Authorization` when it depends on the caller).
    pub vary: Option<String>,
}

impl Client {
    /// Discovers the API: `OPTIONS /`, filtered by `tags` (any of them; none means all).
    ///
    /// # Errors
    /// A transport error, an error status, or a body that is not a manifest.
    pub async fn discover(&self, tags: &[&str]) -> Result<Manifest> {
        match self.discover_since(tags, None).await? {
            Some(discovered) => Ok(discovered.manifest),
            None => Err(Error::not_described(
                "the server answered OPTIONS / with 304 to a request that named no entity tag",
            )),
        }
    }

    /// Discovers the API as [`discover`](Self::discover) does, unless the manifest still has
    /// the entity tag `etag` (from an earlier answer): then the server answers `304` without
    /// a body and this returns `None`. For watching an API for changes cheaply.
    ///
    /// ```no_run
    /// # async fn run(client: halo_client::Client) -> halo_client::Result<()> {
    /// let first = client.discover_since(&[], None).await?.expect("no entity tag given");
    /// // ... later:
    /// if let Some(changed) = client.discover_since(&[], first.etag.as_deref()).await? {
    ///     println!("{} tools now", changed.manifest.tools.len());
    /// }
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`discover`](Self::discover).
    pub async fn discover_since(
        &self,
        tags: &[&str],
        etag: Option<&str>,
    ) -> Result<Option<Discovered>> {
        let mut url = self.resolve("/")?;
        if !tags.is_empty() {
            url.query_pairs_mut().append_pair("tags", &tags.join(","));
        }
        let etag = etag.and_then(|etag| HeaderValue::try_from(etag).ok());
        let response = self.discovery_request(url, etag).await?;
        if response.status() == StatusCode::NOT_MODIFIED {
            return Ok(None);
        }
        let json = response.json().ok_or_else(|| {
            Error::not_described(format!(
                "the server answered OPTIONS / without a HALO manifest ({})",
                response.status()
            ))
        })?;
        let manifest = serde_json::from_value(json.clone())
            .map_err(|e| Error::decode(e).with_context("OPTIONS /"))?;
        let header = |name| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        Ok(Some(Discovered {
            manifest,
            etag: header(ETAG),
            cache_control: header(CACHE_CONTROL),
            vary: header(VARY),
        }))
    }

    /// The schema of the `method` operation at `url` (a path of the API, a concrete path such
    /// as `/api/books/42`, or an absolute URL).
    ///
    /// Schemas are cached per path. After the server's `Cache-Control: max-age` (or the
    /// client's schema TTL when it sends none) a cached path is revalidated with
    /// `If-None-Match`, and a `304` keeps it without a body.
    ///
    /// # Errors
    /// As [`discover`](Self::discover), and [`Error::is_not_described`] when the path does not
    /// describe `method` (never another method's schema).
    pub async fn describe(&self, url: &str, method: Method) -> Result<ToolSchema> {
        let schemas = self.schemas(url).await?;
        find(&schemas, &method, url).cloned()
    }

    /// The schemas of every method a path describes, in the server's order (one request,
    /// cached like [`describe`](Self::describe)).
    ///
    /// # Errors
    /// As [`describe`](Self::describe); a path the server does not describe is
    /// [`Error::is_not_described`].
    pub async fn describe_path(&self, url: &str) -> Result<Vec<ToolSchema>> {
        Ok(self.schemas(url).await?.as_ref().clone())
    }

    /// The schemas of many tools, fetched concurrently (at most the builder's `concurrency` at
    /// a time, one request per path however many methods it has), in the order given. A tool
    /// at `/`, whose `OPTIONS` is the manifest, gets the schema its entry makes
    /// ([`entry_schema`](halo_protocol::entry_schema)).
    ///
    /// # Errors
    /// The first error of any of them.
    pub async fn describe_all<'a, I>(&self, tools: I) -> Result<Vec<ToolSchema>>
    where
        I: IntoIterator<Item = &'a ToolEntry>,
    {
        let tools: Vec<&ToolEntry> = tools.into_iter().collect();
        // Owned paths: a closure taking `&str` would be higher-ranked, and the future of this
        // method not `Send` for every lifetime (rust-lang/rust#102211), as a caller's
        // `tokio::spawn` needs.
        let mut paths: Vec<String> = tools
            .iter()
            .map(|tool| tool.url.clone())
            .filter(|url| url != "/")
            .collect();
        paths.sort_unstable();
        paths.dedup();
        let fetched: HashMap<String, Arc<Vec<ToolSchema>>> = stream::iter(paths)
            .map(|path: String| async move {
                let schemas = self.schemas(&path).await?;
                Ok::<_, Error>((path, schemas))
            })
            .buffer_unordered(self.inner.concurrency)
            .try_collect()
            .await?;
        tools
            .iter()
            .map(|tool| {
                if tool.url == "/" {
                    return Ok(halo_protocol::entry_schema(tool));
                }
                let method = parse_method(&tool.method)?;
                find(&fetched[tool.url.as_str()], &method, &tool.url).cloned()
            })
            .collect()
    }

    /// The schemas of a path, from the cache while fresh, revalidated after.
    pub(super) async fn schemas(&self, url: &str) -> Result<Arc<Vec<ToolSchema>>> {
        // Keyed by the text asked for, so a fresh hit costs no URL parsing.
        let key = url.split(['?', '#']).next().unwrap_or_default();
        let cached = {
            let cache = self.cache();
            match cache.get(key) {
                Some(hit) if hit.fresh_until > Instant::now() => {
                    return Ok(Arc::clone(&hit.schemas));
                }
                stale => stale.cloned(),
            }
        };
        let url = self.resolve(key)?;
        let etag = cached.as_ref().and_then(|c| c.etag.clone());
        let path = url.path().to_owned();
        let response = match self.discovery_request(url, etag).await {
            Err(error) if error.status() == Some(StatusCode::NOT_FOUND) => {
                return Err(Error::not_described(format!("{key} (404)")));
            }
            other => other?,
        };
        let fresh_until = Instant::now() + self.freshness(response.headers());
        let schemas = match (response.status(), cached) {
            (StatusCode::NOT_MODIFIED, Some(cached)) => cached.schemas,
            _ => Arc::new(parse_schemas(&response, &path)?),
        };
        let entry = Cached {
            schemas: Arc::clone(&schemas),
            etag: response.headers().get(ETAG).cloned(),
            fresh_until,
        };
        self.cache().insert(key.to_owned(), entry);
        Ok(schemas)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, SchemaCache> {
        self.inner
            .cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `max-age` from `Cache-Control`; zero for `no-cache`/`no-store`; the schema TTL without it.
    fn freshness(&self, headers: &HeaderMap) -> Duration {
        let Some(cache_control) = headers.get(CACHE_CONTROL).and_then(|v| v.to_str().ok()) else {
            return self.inner.schema_ttl;
        };
        let mut max_age = None;
        for directive in cache_control.split(',').map(str::trim) {
            let lower = directive.to_ascii_lowercase();
            if lower == "no-cache" || lower == "no-store" {
                return Duration::ZERO;
            }
            if let Some(seconds) = lower.strip_prefix("max-age=") {
                max_age = seconds
                    .trim_matches('"')
                    .parse()
                    .ok()
                    .map(Duration::from_secs);
            }
        }
        max_age.unwrap_or(self.inner.schema_ttl)
    }

    /// An `OPTIONS` discovery request (safe, so retried by the policy).
    pub(crate) async fn discovery_request(
        &self,
        url: Url,
        etag: Option<HeaderValue>,
    ) -> Result<ToolResponse> {
        let mut headers = HeaderMap::new();
        headers.insert(ACCEPT, HeaderValue::from_static(MEDIA_TYPE));
        if let Some(etag) = etag {
            headers.insert(IF_NONE_MATCH, etag);
        }
        let request = Prepared {
            method: Method::OPTIONS,
            url,
            headers,
            body: None,
            key_header: None,
            safe: true,
            policy: self.inner.retry,
        };
        self.execute(&request).await
    }
}

/// The schema for `method` among a path's schemas.
pub(super) fn find<'a>(
    schemas: &'a [ToolSchema],
    method: &Method,
    url: &str,
) -> Result<&'a ToolSchema> {
    schemas
        .iter()
        .find(|schema| schema.call.method.eq_ignore_ascii_case(method.as_str()))
        .ok_or_else(|| {
            let offered: Vec<&str> = schemas.iter().map(|s| s.call.method.as_str()).collect();
            Error::not_described(format!(
                "{url} describes {} but not {method}",
                if offered.is_empty() {
                    "no method".to_owned()
                } else {
                    offered.join(", ")
                }
            ))
        })
}

/// A per-path answer: an array of schemas, or the single object older servers send.
fn parse_schemas(response: &ToolResponse, url: &str) -> Result<Vec<ToolSchema>> {
    let json = response.json().ok_or_else(|| {
        Error::not_described(format!(
            "{url} answered OPTIONS without a HALO description ({})",
            response.status()
        ))
    })?;
    let parsed = match json {
        Value::Array(_) => serde_json::from_value(json.clone()),
        _ => serde_json::from_value(json.clone()).map(|schema| vec![schema]),
    };
    parsed.map_err(|e| Error::decode(e).with_context(format!("OPTIONS {url}")))
}
