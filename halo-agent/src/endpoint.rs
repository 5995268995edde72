//! What the HTTP providers share: their base URL and retries, the chat stream of a request
//! that opens, the temperature as sent, how an endpoint is named in errors, how long an
//! endpoint's message may be, a reqwest failure by kind, a silent model, and `Retry-After`.

use std::future::Future;
use std::time::Duration;

use futures_util::StreamExt as _;
use futures_util::stream;
use halo_protocol::RetrySchedule;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use serde_json::{Map, Value, json};

use crate::{ChatStream, Error, Result};

/// The most of an endpoint's message shown in an error, in bytes.
pub(crate) const MAX_MESSAGE: usize = 500;

/// The retries of a provider's builder: 4 attempts, the first delay bound 200 ms, doubling up
/// to 10 s, 30 s of waits at most.
pub(crate) fn default_retry() -> RetrySchedule {
    RetrySchedule::new()
        .with_max_attempts(4)
        .with_min_delay(Duration::from_millis(200))
        .with_max_delay(Duration::from_secs(10))
        .with_max_elapsed(Duration::from_secs(30))
}

/// A base URL as given to a builder, checked: trimmed and without a trailing slash, and as
/// parsed.
///
/// # Errors
/// [`Error::is_builder`] unless it is an absolute `http` or `https` URL.
pub(crate) fn base_url(given: &str) -> Result<(String, reqwest::Url)> {
    let base_url = given.trim().trim_end_matches('/').to_owned();
    let parsed = reqwest::Url::parse(&base_url)
        .map_err(|e| Error::builder(format!("the base URL is not a URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(Error::builder(
            "the base URL must be an absolute http or https URL",
        ));
    }
    Ok((base_url, parsed))
}

/// The chat stream of a request that `open` sends: the answer's events once it opens, or
/// the one error that kept it from opening.
pub(crate) fn chat_stream<F>(open: F) -> ChatStream
where
    F: Future<Output = Result<ChatStream>> + Send + 'static,
{
    stream::once(open)
        .flat_map(|opened| match opened {
            Ok(events) => events,
            Err(error) => stream::once(async { Err(error) }).boxed(),
        })
        .boxed()
}

/// Sets `temperature` in a request body, when there is one, through its shortest text, so
/// that 0.2 is sent as 0.2 (not as the `f32`'s 0.20000000298...).
pub(crate) fn insert_temperature(body: &mut Map<String, Value>, temperature: Option<f32>) {
    if let Some(temperature) = temperature
        && let Ok(number) = temperature.to_string().parse::<f64>()
    {
        body.insert("temperature".into(), json!(number));
    }
}

/// The error for a model that sent nothing within `limit` of a streamed answer, naming the
/// endpoint.
pub(crate) fn silence(limit: Duration, endpoint: &str) -> Error {
    Error::timeout(format!(
        "the model sent nothing for {} ms",
        limit.as_millis()
    ))
    .at(endpoint)
}

/// A reqwest error without its URL, by kind.
pub(crate) fn transport_error(error: reqwest::Error) -> Error {
    let error = error.without_url();
    let message = error.to_string();
    let kind = if error.is_connect() {
        Error::connect(message)
    } else if error.is_timeout() {
        Error::timeout(message)
    } else {
        Error::request(message)
    };
    kind.with_source(error)
}

/// `url` as an error may show it: its scheme, host, port (when not the scheme's default) and
/// path. Its user and password, query and fragment are left out: they may carry secrets.
pub(crate) fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        shown.push(':');
        shown.push_str(&port.to_string());
    }
    shown.push_str(url.path());
    shown
}

/// `text` cut to [`MAX_MESSAGE`] bytes on a character boundary.
pub(crate) fn shorten(text: &str) -> String {
    if text.len() <= MAX_MESSAGE {
        return text.to_owned();
    }
    let mut end = MAX_MESSAGE;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

/// `Retry-After` in seconds, or OpenAI's `retry-after-ms`; at most an hour.
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let read = |name| headers.get(name)?.to_str().ok()?.trim().parse::<f64>().ok();
    let delay = read("retry-after-ms")
        .map(|ms| ms / 1000.0)
        .or_else(|| read(RETRY_AFTER.as_str()))?;
    (delay.is_finite() && delay >= 0.0).then(|| Duration::from_secs_f64(delay.min(3600.0)))
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    #[test]
    fn retry_after_headers() {
        let mut headers = HeaderMap::new();
        headers.insert(RETRY_AFTER, HeaderValue::from_static("2"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert("retry-after-ms", HeaderValue::from_static("150"));
        assert_eq!(retry_after(&headers), Some(Duration::from_millis(150)));
        headers.insert("retry-after-ms", HeaderValue::from_static("soon"));
        assert_eq!(retry_after(&headers), Some(Duration::from_secs(2)));
        headers.insert(RETRY_AFTER, HeaderValue::from_static("-1"));
        headers.remove("retry-after-ms");
        assert_eq!(retry_after(&headers), None);
    }

    #[test]
    fn errors_name_the_endpoint_without_what_may_carry_secrets() {
        let shown = |url: &str| shown_url(&reqwest::Url::parse(url).unwrap());
        assert_eq!(
            shown("http://user:hunter2@127.0.0.1:11434/v1/chat/completions?key=k#frag"),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(
            shown("https://api.example.com:443/v1"),
            "https://api.example.com/v1"
        );
        assert_eq!(shown("http://[::1]:8000/v1"), "http://[::1]:8000/v1");
    }

    #[test]
    fn long_messages_are_cut_on_a_character() {
        assert_eq!(shorten("short"), "short");
        let long = "é".repeat(MAX_MESSAGE);
        let cut = shorten(&long);
        assert!(cut.ends_with('…') && cut.len() <= MAX_MESSAGE + '…'.len_utf8());
    }
}
