//! Running an approved call on another replica when the one that received it has stopped.
//!
//! With approvals in Redis, the replica that receives a held call (its holder) keeps the
//! request in memory and runs it once approved. Opt-in, with the app the layer wraps
//! ([`HaloLayer::take_over_with`]), the holder also keeps in the approval's record what
//! another replica needs to run it: the method, the path and query, the headers without
//! credentials, the body, and the caller's [`Principal`]. A pending approval whose holder
//! stopped then stays pending (it can still run). Once it is approved, a replica that finds
//! it approved, not run, and its holder's heartbeat gone claims it in one script (exactly
//! one replica wins: `CLAIM` in halo-govern's `approval::redis::scripts`) and runs it as the
//! holder would (`run`): the circuit, the idempotency key, the deadline, and the handler,
//! reached through the app with a [`Takeover`] mark that tells the layer the checks before
//! are done. The caller's principal travels in the request's extensions, so no credential is
//! needed, and an HTTP client cannot forge the mark (extensions never come from the wire).

use std::sync::Arc;

use axum::Router;
use bytes::Bytes;
use http::header::{AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION};
use http::request::Parts;
use http::{HeaderMap, Method, Request, StatusCode};

use super::run;
use crate::approval::{Answer, Entry, Kept, Phase, State};
use crate::govern::{decode_headers, encode_headers};
use crate::layer::Shared;
use crate::{HaloLayer, Principal};

/// Marks a request that runs an approved call taken over from a replica that stopped: the
/// steps before the handler ran in [`run`] already, so the layer passes it to the app's
/// handler. Only this module makes one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Takeover;

impl HaloLayer {
    /// Lets this layer's instances run an approved call whose instance stopped before it
    /// ran. Needs approvals kept in Redis ([`HaloBuilder::redis`](crate::HaloBuilder::redis));
    /// give it the app the layer wraps, and serve the router it gives back in its place.
    ///
    /// Without it, an approval lives in the memory of the instance that received the call:
    /// when that instance stops, the call can never run and expires. With it, that instance
    /// also keeps in Redis what another needs to run the call: the method, path and query,
    /// the headers without credentials (`Authorization`, `Proxy-Authorization`, `Cookie`,
    /// and the headers of the API's `apiKey` schemes), the body, and the caller's
    /// [`Principal`]. Once approved, the call runs on the instance that finds it orphaned,
    /// exactly once, as its caller. Give every instance its app: an instance without one
    /// can approve such a call but not run it. The first app given is the one used.
    ///
    /// ```
    /// use axum::Router;
    /// use halo_axum::{ApprovalQueue, HaloLayer, RedisStore};
    /// # use utoipa_axum::{router::OpenApiRouter, routes};
    /// # /// Ping.
    /// # #[utoipa::path(get, path = "/ping", responses((status = 200)))]
    /// # async fn ping() {}
    /// # let (router, api) = OpenApiRouter::new().routes(routes!(ping)).split_for_parts();
    ///
    /// let layer = HaloLayer::builder(api)
    ///     .approver(ApprovalQueue::new("approvals"))
    ///     .redis(RedisStore::open("redis://127.0.0.1:6379/").expect("a Redis URL"))
    ///     .build()
    ///     .expect("valid HALO metadata");
    /// let app: Router = router.layer(layer.clone());
    /// let app: Router = layer.take_over_with(app);
    /// # let _ = app;
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
    #[must_use = "serve the router it gives back: taking over lasts while it is served"]
    pub fn take_over_with(&self, app: Router) -> Router {
        self.shared.takeover.hold(app)
    }
}

/// The held call as another replica may run it, when the layer takes over orphaned calls
/// in Redis: its method, target, headers without credentials, the caller (`caller`) and the
/// body.
pub(crate) fn portable(
    shared: &Shared,
    parts: &Parts,
    body: &[u8],
    caller: Option<&Principal>,
) -> Option<Vec<u8>> {
    shared.approvals.redis()?;
    if !shared.takeover.is_set() {
        return None;
    }
    let mut headers = parts.headers.clone();
    let secret = [AUTHORIZATION, PROXY_AUTHORIZATION, COOKIE];
    for name in secret.iter().chain(shared.discovery.registry.key_headers()) {
        headers.remove(name);
    }
    let target = parts.uri.path_and_query().map_or("/", |t| t.as_str());
    encode(&parts.method, target, &headers, caller, body)
}

/// A request as [`decode`] reads it back: four sections (method, target, headers, the
/// caller as JSON or nothing), each after its length (4 bytes, big-endian), then the body.
fn encode(
    method: &Method,
    target: &str,
    headers: &HeaderMap,
    caller: Option<&Principal>,
    body: &[u8],
) -> Option<Vec<u8>> {
    let caller = caller.map_or_else(Vec::new, |c| c.to_json().to_string().into_bytes());
    let sections: [&[u8]; 4] = [
        method.as_str().as_bytes(),
        target.as_bytes(),
        &encode_headers(headers),
        &caller,
    ];
    let mut out = Vec::with_capacity(body.len() + 512);
    for section in sections {
        out.extend_from_slice(&u32::try_from(section.len()).ok()?.to_be_bytes());
        out.extend_from_slice(section);
    }
    out.extend_from_slice(body);
    Some(out)
}

/// A request read back from [`portable`]: its head (the caller in its extensions) and body.
fn decode(bytes: &[u8]) -> Option<(Parts, Bytes)> {
    fn section<'a>(rest: &mut &'a [u8]) -> Option<&'a [u8]> {
        let (len, tail) = rest.split_first_chunk::<4>()?;
        let len = usize::try_from(u32::from_be_bytes(*len)).ok()?;
        if tail.len() < len {
            return None;
        }
        let (section, tail) = tail.split_at(len);
        *rest = tail;
        Some(section)
    }
    let mut rest = bytes;
    let method = Method::from_bytes(section(&mut rest)?).ok()?;
    let target = std::str::from_utf8(section(&mut rest)?).ok()?;
    let headers = decode_headers(section(&mut rest)?);
    let caller = section(&mut rest)?;
    let request = Request::builder()
        .method(method)
        .uri(target)
        .body(())
        .ok()?;
    let (mut parts, ()) = request.into_parts();
    parts.headers = headers;
    if !caller.is_empty() {
        let json = serde_json::from_slice(caller).ok()?;
        parts.extensions.insert(Principal::from_json(&json)?);
    }
    Some((parts, Bytes::copy_from_slice(rest)))
}

/// Runs `entry` here when it is approved and has not run, its holder has stopped, and this
/// layer may take over: claims it in Redis (one replica wins) and runs it in a task of its
/// own, followed as this replica's own. Does nothing otherwise (one read of Redis when it
/// is approved and not run, none else).
pub(crate) async fn take_over(shared: &Arc<Shared>, entry: &Arc<Entry>) {
    let book = match shared.approvals.redis() {
        Some(book) if entry.phase() == Phase::Running && book.own_entry(&entry.id).is_none() => {
            book
        }
        _ => return,
    };
    let Some(app) = shared.takeover.app() else {
        return;
    };
    let Some(kept) = book.claim(&entry.id).await else {
        return;
    };
    book.adopt(entry, shared);
    let Some((mut parts, body)) = decode(&kept) else {
        // Damaged in the store: it cannot run, and says so.
        let failed = Answer {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            headers: Vec::new(),
            body: None,
        };
        shared.approvals.finish(entry, failed).await;
        return;
    };
    parts.extensions.insert(Takeover);
    let by = entry.with_state(|state| match state {
        State::Approved { by, .. } => by.clone(),
        _ => String::new(),
    });
    let kept = Kept {
        parts,
        body,
        runner: crate::approval::runner(app),
    };
    run::start(shared, entry, kept, &by);
}

/// Whether `request` runs a call taken over (see [`Takeover`]).
#[inline]
pub(crate) fn is_takeover<B>(request: &Request<B>) -> bool {
    request.extensions().get::<Takeover>().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_portable_request_reads_back_whole() {
        let request = Request::post("/refunds/7?fast=1")
            .header("content-type", "application/json")
            .header("idempotency-key", "k-1")
            .body(())
            .expect("a request");
        let (parts, ()) = request.into_parts();
        let caller = Principal::new("alice")
            .with_scopes(["refunds"])
            .in_tenant("acme")
            .authenticated_by(crate::Scheme::ApiKey(http::HeaderName::from_static(
                "x-key",
            )));
        let target = "/refunds/7?fast=1";
        let body = b"{\"amount\":20}";
        let bytes =
            encode(&Method::POST, target, &parts.headers, Some(&caller), body).expect("encoded");
        let (read, body) = decode(&bytes).expect("read back");
        assert_eq!(read.method, Method::POST);
        assert_eq!(read.uri, "/refunds/7?fast=1");
        assert_eq!(read.headers, parts.headers);
        assert_eq!(read.extensions.get::<Principal>(), Some(&caller));
        assert_eq!(&body[..], b"{\"amount\":20}");
        // An anonymous call has no principal.
        let anonymous = encode(&Method::POST, target, &parts.headers, None, b"").expect("encoded");
        let (read, body) = decode(&anonymous).expect("read back");
        assert!(read.extensions.get::<Principal>().is_none());
        assert!(body.is_empty());
        // Cut short anywhere: not a request.
        for end in [0, 3, 6, 20] {
            assert!(decode(&bytes[..end]).is_none(), "cut at {end}");
        }
    }
}
