//! A call's answer for people and programs: the response (its problem details when it
//! failed), and the events of a streamed call.

use std::fmt::Write as _;

use halo_client::protocol::ToolEvent;
use halo_client::{Body, StatusCode, ToolResponse};
use serde_json::{Map, Value};

use super::{block, compact, json, line};

/// The status line and the body of a response.
pub(crate) fn response(response: &ToolResponse) -> String {
    let mut out = format!("{}\n", status_line(response));
    if let Some(location) = response
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
    {
        let _ = writeln!(out, "Location: {}", line(location));
    }
    out.push_str(&body(response.body()));
    out
}

/// A failed call: the status line, then the problem details (or whatever body came back).
pub(crate) fn error_response(response: &ToolResponse) -> String {
    let mut out = format!("{}\n", status_line(response));
    match response.json() {
        Some(Value::Object(problem)) if is_problem(response, problem) => {
            out.push_str(&problem_details(problem, response.status()));
        }
        _ => out.push_str(&body(response.body())),
    }
    out
}

/// A problem details body, one indented `key: value` row per member, then its errors.
fn problem_details(problem: &Map<String, Value>, status: StatusCode) -> String {
    let mut out = String::new();
    let mut rows: Vec<(String, String)> = Vec::new();
    for key in ["title", "detail", "type", "instance"] {
        match problem.get(key) {
            Some(Value::String(text)) if key == "type" && text == "about:blank" => {}
            Some(Value::String(text))
                if key == "title" && status.canonical_reason() == Some(text.as_str()) => {}
            Some(Value::String(text)) => rows.push((key.to_owned(), line(text))),
            _ => {}
        }
    }
    for (key, value) in problem {
        if !matches!(
            key.as_str(),
            "title" | "detail" | "type" | "instance" | "status" | "errors"
        ) {
            rows.push((line(key), compact(value)));
        }
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0) + 1;
    for (key, value) in &rows {
        let _ = writeln!(out, "  {:<width$}  {value}", format!("{key}:"));
    }
    if let Some(Value::Array(errors)) = problem.get("errors") {
        let _ = writeln!(out, "  errors:");
        for error in errors {
            let pointer = error.get("pointer").and_then(Value::as_str);
            let message = error.get("message").and_then(Value::as_str);
            match (pointer, message) {
                (Some(""), Some(message)) => {
                    let _ = writeln!(out, "    (input): {}", line(message));
                }
                (Some(pointer), Some(message)) => {
                    let _ = writeln!(out, "    {}: {}", line(pointer), line(message));
                }
                _ => {
                    let _ = writeln!(out, "    {}", compact(error));
                }
            }
        }
    }
    out
}

/// One event of a streamed call for people: `2 progress step 1/3: reading`, and after
/// `tool_end` its content, after `tool_error` its problem.
pub(crate) fn event(id: u64, event: &ToolEvent) -> String {
    match event {
        ToolEvent::ToolStart(start) => format!(
            "{id} tool_start {} (call {})\n",
            line(&start.tool),
            line(&start.call_id)
        ),
        ToolEvent::ToolProgress(progress) => format!("{id} progress {}\n", progress_text(progress)),
        ToolEvent::ToolEnd(end) => {
            let mut out = format!("{id} tool_end {}\n", status_text(end.status));
            out.push_str(&content(&end.content));
            out
        }
        ToolEvent::ToolError(problem) => {
            let mut out = format!("{id} tool_error {}\n", status_text(problem.status));
            if let (Ok(Value::Object(details)), Ok(status)) = (
                serde_json::to_value(problem),
                StatusCode::from_u16(problem.status),
            ) {
                out.push_str(&problem_details(&details, status));
            }
            out
        }
        ToolEvent::ApprovalPending(approval) => {
            let text = |name: &str| approval[name].as_str().map(line).unwrap_or_default();
            format!(
                "{id} approval_pending {} (tool {}); waiting for a decision\n",
                text("id"),
                text("tool")
            )
        }
        other => format!("{id} {}\n", other.name()),
    }
}

/// One event of a streamed call as one line of JSON: `{"id": 1, "type": ..., "data": ...}`.
pub(crate) fn event_line(id: u64, event: &ToolEvent) -> String {
    let mut object = Map::new();
    object.insert("id".to_owned(), id.into());
    if let Ok(Value::Object(fields)) = serde_json::to_value(event) {
        object.extend(fields);
    }
    let mut text = Value::Object(object).to_string();
    text.push('\n');
    text
}

/// Progress by its conventional members (`step 1/3: reading`), anything else as JSON.
fn progress_text(progress: &Value) -> String {
    let step = progress.get("step").and_then(Value::as_u64);
    let total = progress.get("total").and_then(Value::as_u64);
    let message = progress.get("message").and_then(Value::as_str).map(line);
    match (step, total, message) {
        (Some(step), Some(total), Some(message)) => format!("step {step}/{total}: {message}"),
        (Some(step), None, Some(message)) => format!("step {step}: {message}"),
        (Some(step), Some(total), None) => format!("step {step}/{total}"),
        (None, None, Some(message)) => message,
        _ => compact(progress),
    }
}

/// A result's content: pretty JSON, a string as text, nothing for `null`.
fn content(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(text) => text_block(text),
        value => json(value),
    }
}

/// A body: pretty JSON, text, or nothing.
fn body(body: &Body) -> String {
    match body {
        Body::Json(value) => json(value),
        Body::Text(text) => text_block(text),
        _ => String::new(),
    }
}

/// Untrusted text on lines of its own, ending with a newline.
fn text_block(text: &str) -> String {
    let mut text = block(text);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}

fn status_line(response: &ToolResponse) -> String {
    status_text(response.status().as_u16())
}

/// `404 Not Found`, or the bare number.
fn status_text(status: u16) -> String {
    match StatusCode::from_u16(status)
        .ok()
        .and_then(|status| status.canonical_reason())
    {
        Some(reason) => format!("{status} {reason}"),
        None => status.to_string(),
    }
}

fn is_problem(response: &ToolResponse, body: &Map<String, Value>) -> bool {
    let declared = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("problem+json"));
    declared || (body.contains_key("title") || body.contains_key("detail"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_for_people_and_for_programs() {
        use halo_client::protocol::{Problem, ToolEnd, ToolStart};

        let start = ToolEvent::ToolStart(ToolStart::new("c-7f3", "summarize_book"));
        assert_eq!(
            event(1, &start),
            "1 tool_start summarize_book (call c-7f3)\n"
        );
        let line = event_line(1, &start);
        assert!(line.ends_with('\n') && line.lines().count() == 1, "{line}");
        assert_eq!(
            serde_json::from_str::<Value>(&line).unwrap(),
            json!({"id": 1, "type": "tool_start",
                               "data": {"call_id": "c-7f3", "tool": "summarize_book"}})
        );
        for (progress, text) in [
            (
                json!({"step": 1, "message": "reading chapter 1"}),
                "step 1: reading chapter 1",
            ),
            (
                json!({"step": 2, "total": 9, "message": "a\u{1b}[2Jb"}),
                "step 2/9: a [2Jb",
            ),
            (json!({"step": 3, "total": 9}), "step 3/9"),
            (json!({"message": "almost"}), "almost"),
            (json!({"pct": 50}), "{\"pct\":50}"),
            (json!("plain"), "\"plain\""),
        ] {
            let line = event(2, &ToolEvent::ToolProgress(progress));
            assert_eq!(line, format!("2 progress {text}\n"));
        }
        let end = ToolEvent::ToolEnd(ToolEnd::new(200, json!({"words": 3})));
        assert_eq!(event(3, &end), "3 tool_end 200 OK\n{\n  \"words\": 3\n}\n");
        let text = ToolEvent::ToolEnd(ToolEnd::new(201, json!("done")));
        assert_eq!(event(3, &text), "3 tool_end 201 Created\ndone\n");
        let failed = ToolEvent::ToolError(Problem::new(504).with_detail("took too long"));
        assert_eq!(
            event(4, &failed),
            "4 tool_error 504 Gateway Timeout\n  detail:  took too long\n"
        );
        assert_eq!(
            serde_json::from_str::<Value>(&event_line(4, &failed)).unwrap(),
            json!({"id": 4, "type": "tool_error", "data": {"type": "about:blank",
                   "title": "Gateway Timeout", "status": 504, "detail": "took too long"}})
        );
        let held = ToolEvent::ApprovalPending(json!({"id": "3f0c", "tool": "refund\u{1b}[2J"}));
        assert_eq!(
            event(2, &held),
            "2 approval_pending 3f0c (tool refund [2J); waiting for a decision\n"
        );
    }
}
