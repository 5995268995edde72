//! Reading a `text/event-stream` body, as tests of streamed answers do, and asking for one.

use reqwest::StatusCode;
use serde_json::Value;

/// The events of an event-stream body that carry data (a `data:` line), in order.
pub fn data_events(text: &str) -> impl Iterator<Item = SseEvent<'_>> {
    text.split("\n\n")
        .map(SseEvent)
        .filter(|event| event.field("data").is_some())
}

/// One event of an event stream: a block of `name: value` lines.
#[derive(Debug, Clone, Copy)]
pub struct SseEvent<'a>(&'a str);

impl<'a> SseEvent<'a> {
    /// The value of the event's first `name:` line, trimmed; `None` without one.
    #[must_use]
    pub fn field(&self, name: &str) -> Option<&'a str> {
        self.0
            .lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
            .map(str::trim)
    }

    /// The event's lines, as they were sent.
    #[must_use]
    pub fn text(&self) -> &'a str {
        self.0
    }
}

/// POSTs `body` (as JSON) to `url` asking for an event stream (`accept:
/// text/event-stream`): the answer's status and its whole body.
///
/// # Panics
/// When there is no answer, or its body cannot be read.
pub async fn post_streamed(url: &str, body: &Value) -> (StatusCode, String) {
    let answer = reqwest::Client::new()
        .post(url)
        .header("accept", "text/event-stream")
        .json(body)
        .send()
        .await
        .expect("an answer");
    let status = answer.status();
    (status, answer.text().await.expect("the body"))
}

/// The tool events of an event-stream body: each one's name (`tool_start`, ...) and the
/// `data` of its envelope (`{"type": ..., "data": ...}`).
///
/// # Panics
/// When an event's data is not JSON.
#[must_use]
pub fn tool_events(text: &str) -> Vec<(String, Value)> {
    data_events(text)
        .map(|event| {
            let data: Value = serde_json::from_str(event.field("data").unwrap_or_default())
                .unwrap_or_else(|e| panic!("an event's data is not JSON ({e}): {text}"));
            let name = event.field("event").unwrap_or_default().to_owned();
            (name, data["data"].clone())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::data_events;

    #[test]
    fn events_without_data_are_left_out_and_fields_are_trimmed() {
        let text = ": keep-alive\n\nid: 1\nevent: tool_progress\ndata: {\"n\": 1}\n\nretry: 10";
        let events: Vec<_> = data_events(text).collect();
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].field("id"), Some("1"));
        assert_eq!(events[0].field("event"), Some("tool_progress"));
        assert_eq!(events[0].field("data"), Some("{\"n\": 1}"));
        assert_eq!(events[0].field("retry"), None);
    }
}
