//! One attempt's hops: redirects followed by hand, each admitted by its own host's circuit
//! breaker, the credential of each hop's own host applied (and an OAuth token the API
//! refuses renewed once, for the resource its protected resource metadata names).

use reqwest::header::{CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode};

use super::{Client, Prepared};
use crate::breaker::Pass;
use crate::retry::Failure;
use crate::{Credential, Error, oauth};

/// How many redirects one attempt follows.
const MAX_REDIRECTS: usize = 10;

impl Client {
    /// Sends a request and follows redirects, re-deciding credentials at every hop; the
    /// answer's body is still to be read. An OAuth access token the API refuses (`401`) is
    /// renewed and the request sent once more (that repeat counts as a hop). A hop to a host
    /// whose circuit is open fails at once, unsent.
    pub(crate) async fn send(
        &self,
        request: &Prepared,
        pass: &Pass<'_>,
    ) -> Result<reqwest::Response, Failure> {
        let mut method = request.method.clone();
        let mut url = request.url.clone();
        let mut body = request.body.clone();
        let mut renewed = false;
        for hop in 0..=MAX_REDIRECTS {
            pass.admit(hop, &url).map_err(Failure::Fatal)?;
            let credentials = &self.inner.credentials;
            let mut headers = request.headers.clone();
            for name in credentials.headers() {
                headers.remove(name);
            }
            if credentials.has_scheme_keys()
                && let Some(name) = &request.key_header
            {
                headers.remove(name);
            }
            // The tool's description names the key header of its own origin only, not of
            // one a redirect leads to.
            let key_header = request
                .key_header
                .as_ref()
                .filter(|_| url.origin() == request.url.origin());
            // The credential, and what it sent if a refusal can renew it.
            let mut renewable = None;
            if let Some(credential) = credentials.for_url(&url) {
                let sent = credential
                    .apply(&self.inner.http, &url, &mut headers, key_header)
                    .await
                    .map_err(Failure::credential)?;
                renewable = sent.filter(|_| !renewed).map(|sent| (credential, sent));
            }
            let mut outgoing = reqwest::Request::new(method.clone(), url.clone());
            if let Some(body) = &body {
                headers.insert(CONTENT_TYPE, body.content_type.clone());
                *outgoing.body_mut() = Some(body.bytes.clone().into());
            }
            // An upgrade (a WebSocket stream's) is an HTTP/1.1 mechanism.
            if headers.contains_key(reqwest::header::UPGRADE) {
                *outgoing.version_mut() = reqwest::Version::HTTP_11;
            }
            *outgoing.headers_mut() = headers;
            // Boxed: reqwest's future is large, and every future around it would otherwise
            // carry (and move) it.
            let response = Box::pin(self.inner.http.execute(outgoing))
                .await
                .map_err(Failure::Transport)?;
            if response.status() == StatusCode::UNAUTHORIZED
                && let Some((credential, sent)) = renewable
            {
                // Refused before it ran: renew the credential and send the request again,
                // for the resource the API's metadata names (RFC 9728) if it names one.
                credential.refused(&sent).await;
                if let Credential::ClientCredentials(oauth) = credential
                    && let Some(metadata) = oauth::resource_metadata(response.headers())
                {
                    oauth
                        .learn(&self.inner.http, &metadata, &url)
                        .await
                        .map_err(Failure::credential)?;
                }
                renewed = true;
                continue;
            }
            let status = response.status();
            if !status.is_redirection() || status == StatusCode::NOT_MODIFIED {
                return Ok(response);
            }
            let location = response
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| Failure::Fatal(Error::redirect("a redirect without a Location")))?;
            let next = url
                .join(location)
                .map_err(|_| Failure::Fatal(Error::redirect("an invalid Location")))?;
            if next.origin() != url.origin() {
                // That host answered: it is there.
                pass.answered(&url);
            }
            url = next;
            let downgrade = status == StatusCode::SEE_OTHER
                || (matches!(status, StatusCode::MOVED_PERMANENTLY | StatusCode::FOUND)
                    && method == Method::POST);
            if downgrade {
                method = Method::GET;
                body = None;
            }
        }
        Err(Failure::Fatal(Error::redirect(format!(
            "more than {MAX_REDIRECTS} redirects"
        ))))
    }
}
