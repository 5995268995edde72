//! Readable text for people: tables, schema summaries, responses, problems, events and
//! diffs.
//!
//! Everything a server sent is untrusted: control characters (terminal escape sequences
//! among them) are replaced before anything is printed.

use std::fmt::Write as _;

use halo_client::protocol::{Manifest, ToolEntry, ToolEvent, ToolSchema};
use halo_client::{Body, Pin, PinDiff, StatusCode, ToolResponse};
use serde::Serialize;
use serde_json::{Map, Value};

/// The widest a description gets in the tool table.
const DESCRIPTION_WIDTH: usize = 60;

/// Pretty JSON with a final newline.
pub(crate) fn json<T: Serialize + ?Sized>(value: &T) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_else(|_| "null".to_owned());
    text.push('\n');
    text
}

/// The manifest: a heading, then one row per tool.
pub(crate) fn manifest(manifest: &Manifest) -> String {
    let mut out = heading(&manifest.api, &manifest.version);
    if !manifest.description.is_empty() {
        let _ = write!(out, ": {}", line(&manifest.description));
    }
    out.push('\n');
    if manifest.tools.is_empty() {
        out.push_str("no tools\n");
        return out;
    }
    let rows: Vec<Vec<String>> = manifest
        .tools
        .iter()
        .map(|tool| {
            vec![
                line(&tool.method),
                line(&tool.url),
                line(&tool.name),
                line(&tool.tags.join(",")),
                truncate(&line(&tool.description), DESCRIPTION_WIDTH),
            ]
        })
        .collect();
    out.push_str(&table(
        &["METHOD", "URL", "NAME", "TAGS", "DESCRIPTION"],
        &rows,
    ));
    out
}

/// What a search found, best first: one line per tool, `name  METHOD url  description`,
/// in aligned columns.
pub(crate) fn found(tools: &[ToolEntry]) -> String {
    let rows: Vec<Vec<String>> = tools
        .iter()
        .map(|tool| {
            vec![
                line(&tool.name),
                format!("{} {}", line(&tool.method), line(&tool.url)),
                truncate(&line(&tool.description), DESCRIPTION_WIDTH),
            ]
        })
        .collect();
    let mut out = String::new();
    // The table without its header row.
    for row in table(&["", "", ""], &rows).lines().skip(1) {
        out.push_str(row);
        out.push('\n');
    }
    out
}

/// A readable summary of one operation's schema.
pub(crate) fn schema(schema: &ToolSchema) -> String {
    let mut out = format!("{} {}\n", line(&schema.call.method), line(&schema.call.url));
    if !schema.description.is_empty() {
        for text in block(&schema.description).lines() {
            if text.trim().is_empty() {
                out.push('\n');
            } else {
                let _ = writeln!(out, "  {text}");
            }
        }
    }
    let mut fields: Vec<(&str, String)> = Vec::new();
    if let Some(why) = &schema.why {
        fields.push(("why", line(why)));
    }
    if !schema.tags.is_empty() {
        fields.push(("tags", line(&schema.tags.join(", "))));
    }
    fields.push(("auth", auth(schema)));
    if let Some(output) = &schema.output {
        fields.push(("output", type_of(output)));
    }
    if let Some(effects) = &schema.effects {
        let mut parts = Vec::new();
        match effects.reversible {
            Some(true) => parts.push("reversible".to_owned()),
            Some(false) => parts.push("not reversible".to_owned()),
            None => {}
        }
        if let Some(undo) = &effects.undo {
            parts.push(format!("undo: {}", line(undo)));
        }
        push_parts(&mut fields, "effects", parts);
    }
    if let Some(limits) = &schema.limits {
        let mut parts = Vec::new();
        match limits.idempotent {
            Some(true) => parts.push("idempotent".to_owned()),
            Some(false) => parts.push("not idempotent".to_owned()),
            None => {}
        }
        if let Some(rate) = &limits.rate {
            parts.push(format!("rate: {rate}"));
        }
        if let Some(key) = &limits.idempotency_key {
            parts.push(format!("idempotency key: {}", line(key)));
        }
        push_parts(&mut fields, "limits", parts);
    }
    if let Some(resilience) = &schema.resilience {
        let mut parts = Vec::new();
        match resilience.retry {
            Some(true) => parts.push("retry".to_owned()),
            Some(false) => parts.push("no retry".to_owned()),
            None => {}
        }
        if let Some(backoff) = &resilience.backoff {
            parts.push(format!("backoff: {}", name_of(backoff)));
        }
        if let Some(timeout) = resilience.timeout_ms {
            parts.push(format!("timeout: {timeout} ms"));
        }
        if let Some(fallback) = &resilience.fallback {
            parts.push(format!("fallback: {}", line(fallback)));
        }
        push_parts(&mut fields, "resilience", parts);
    }
    let lifecycle = &schema.lifecycle;
    let mut parts = Vec::new();
    if let Some(status) = &lifecycle.status {
        parts.push(name_of(status));
    }
    if let Some(sunset) = &lifecycle.sunset {
        parts.push(format!("sunset: {}", line(sunset)));
    }
    if let Some(replacement) = &lifecycle.replace_with {
        parts.push(format!("use instead: {}", line(replacement)));
    }
    push_parts(&mut fields, "status", parts);
    for next in &schema.next {
        fields.push((
            "next",
            format!("{} -> {}", line(&next.when), line(&next.suggest)),
        ));
    }
    if let Some(stream) = &schema.stream {
        fields.push(("stream", line(&stream.events.join(", "))));
    }
    if !schema.examples.is_empty() {
        fields.push((
            "examples",
            format!("{} (see --json)", schema.examples.len()),
        ));
    }
    let width = fields
        .iter()
        .map(|(name, _)| name.len())
        .max()
        .unwrap_or(0)
        .max("inputs".len());
    out.push('\n');
    for (name, value) in &fields {
        let _ = writeln!(
            out,
            "  {:<width$}  {value}",
            format!("{name}:"),
            width = width + 1
        );
    }
    if schema.input.is_empty() {
        let _ = writeln!(out, "  {:<width$}  none", "inputs:", width = width + 1);
    } else {
        let _ = writeln!(out, "  inputs:");
        let rows: Vec<Vec<String>> = schema
            .input
            .iter()
            .map(|(name, field)| {
                let schema = Value::Object(field.schema.clone());
                vec![
                    line(name),
                    field
                        .location
                        .map_or_else(|| "-".to_owned(), |l| name_of(&l)),
                    type_of(&schema),
                    if field.required { "yes" } else { "no" }.to_owned(),
                    truncate(
                        &line(
                            field
                                .schema
                                .get("description")
                                .and_then(Value::as_str)
                                .unwrap_or_default(),
                        ),
                        DESCRIPTION_WIDTH,
                    ),
                ]
            })
            .collect();
        for row in table(&["NAME", "IN", "TYPE", "REQUIRED", "DESCRIPTION"], &rows).lines() {
            let _ = writeln!(out, "    {row}");
        }
    }
    out
}

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

/// The differences between a pin and the API now.
pub(crate) fn diff(pinned: &Pin, current: &Pin, diff: &PinDiff) -> String {
    let mut out = heading(&current.api, &current.version);
    if pinned.version != current.version || pinned.api != current.api {
        let _ = write!(
            out,
            " (pinned: {})",
            heading(&pinned.api, &pinned.version).trim()
        );
    }
    if diff.is_empty() {
        let count = current.tools.len();
        let _ = writeln!(
            out,
            ": no change from the pin ({count} tool{})",
            if count == 1 { "" } else { "s" }
        );
        return out;
    }
    out.push('\n');
    let mut rows = Vec::new();
    for (sign, what, keys, pin) in [
        ("+", "added", &diff.added, current),
        ("-", "removed", &diff.removed, pinned),
        ("~", "changed", &diff.changed, current),
    ] {
        for key in keys {
            let name = pin.tools.get(key).map_or("", |tool| tool.name.as_str());
            let mut name = line(name);
            if what == "changed"
                && let (Some(then), Some(now)) = (pinned.tools.get(key), current.tools.get(key))
                && then.name != now.name
            {
                name = format!("{} (was {})", line(&now.name), line(&then.name));
            }
            rows.push(vec![sign.to_owned(), line(key), name, what.to_owned()]);
        }
    }
    out.push_str(&table(&[" ", "TOOL", "NAME", "CHANGE"], &rows));
    out
}

/// A message after writing a pin to a file.
pub(crate) fn pinned(pin: &Pin, path: &std::path::Path) -> String {
    let count = pin.tools.len();
    format!(
        "pinned {count} tool{} of {} to {}\n",
        if count == 1 { "" } else { "s" },
        heading(&pin.api, &pin.version).trim(),
        path.display()
    )
}

/// `API version`, for the first line of a report.
pub(crate) fn heading(api: &str, version: &str) -> String {
    match (api.is_empty(), version.is_empty()) {
        (true, _) => format!("(unnamed API) {}", line(version)),
        (false, true) => line(api),
        (false, false) => format!("{} {}", line(api), line(version)),
    }
}

fn push_parts(fields: &mut Vec<(&'static str, String)>, name: &'static str, parts: Vec<String>) {
    if !parts.is_empty() {
        fields.push((name, parts.join("; ")));
    }
}

fn auth(schema: &ToolSchema) -> String {
    let Some(auth) = &schema.auth else {
        return "none".to_owned();
    };
    let mut text = name_of(&auth.kind);
    if let Some(header) = &auth.header {
        let _ = write!(text, " in {}", line(header));
    }
    if !auth.scopes.is_empty() {
        let _ = write!(text, " (scopes: {})", line(&auth.scopes.join(", ")));
    }
    if let Some(url) = &auth.token_url {
        let _ = write!(text, " (token: {})", line(url));
    }
    text
}

/// The serde name of an enum value (`deprecated`, `exponential`, `path`).
fn name_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(name)) => line(&name),
        _ => "?".to_owned(),
    }
}

/// A short type for a JSON Schema: `integer`, `string | null`, `array of object`, `one of 2`.
fn type_of(schema: &Value) -> String {
    let Some(map) = schema.as_object() else {
        return "any".to_owned();
    };
    let base = match map.get("type") {
        Some(Value::String(kind)) => line(kind),
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .map(line)
            .collect::<Vec<_>>()
            .join(" | "),
        _ => {
            if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
                return line(reference.rsplit('/').next().unwrap_or(reference));
            }
            for (keyword, label) in [("oneOf", "one of"), ("anyOf", "any of")] {
                if let Some(Value::Array(items)) = map.get(keyword) {
                    let kinds: Vec<String> = items.iter().map(type_of).collect();
                    return format!("{label} {}", kinds.join(", "));
                }
            }
            if let Some(Value::Array(items)) = map.get("allOf") {
                if let [only] = items.as_slice() {
                    return type_of(only);
                }
                return "all of".to_owned();
            }
            if map.contains_key("enum") {
                return "enum".to_owned();
            }
            if map.contains_key("const") {
                return "const".to_owned();
            }
            return "any".to_owned();
        }
    };
    if base == "array"
        && let Some(items) = map.get("items")
    {
        return format!("array of {}", type_of(items));
    }
    base
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

pub(crate) fn compact(value: &Value) -> String {
    line(&value.to_string())
}

/// Aligned columns; the last one is not padded.
fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let header: Vec<String> = headers.iter().map(|h| (*h).to_owned()).collect();
    for row in std::iter::once(&header).chain(rows) {
        let last = row.len().saturating_sub(1);
        let mut text = String::new();
        for (i, (cell, width)) in row.iter().zip(&widths).enumerate() {
            if i == last {
                text.push_str(cell);
            } else {
                let pad = width - cell.chars().count();
                text.push_str(cell);
                text.extend(std::iter::repeat_n(' ', pad + 2));
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// At most `width` characters, with `…` when cut.
pub(crate) fn truncate(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    cut
}

/// One line of untrusted text: whitespace runs and control characters become one space.
pub(crate) fn line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_whitespace() || c.is_control() {
            if !out.ends_with(' ') {
                out.push(' ');
            }
        } else {
            out.push(c);
        }
    }
    out.trim().to_owned()
}

/// Several lines of untrusted text: newlines and tabs kept, other control characters
/// replaced.
pub(crate) fn block(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_control() && c != '\n' && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use halo_client::protocol::{Call, InputField, Location, ToolEntry};
    use serde_json::json;

    #[test]
    fn server_text_cannot_reach_the_terminal_raw() {
        assert_eq!(line("a\u{1b}[31mred\n b\t"), "a [31mred b");
        assert_eq!(block("x\u{1b}y\nz"), "x\u{fffd}y\nz");
    }

    #[test]
    fn truncates_with_an_ellipsis() {
        assert_eq!(truncate("short", 10), "short");
        assert_eq!(truncate("a longer sentence", 10), "a longer…");
        assert_eq!(truncate("ééééééééééé", 4).chars().count(), 4);
    }

    #[test]
    fn types() {
        assert_eq!(type_of(&json!({"type": "integer"})), "integer");
        assert_eq!(
            type_of(&json!({"type": ["string", "null"]})),
            "string | null"
        );
        assert_eq!(
            type_of(&json!({"type": "array", "items": {"type": "string"}})),
            "array of string"
        );
        assert_eq!(
            type_of(&json!({"oneOf": [{"type": "string"}, {"type": "integer"}]})),
            "one of string, integer"
        );
        assert_eq!(
            type_of(&json!({"description": "d", "allOf": [{"type": "object"}]})),
            "object"
        );
        assert_eq!(type_of(&json!({"$ref": "#/$defs/Node"})), "Node");
        assert_eq!(type_of(&json!({})), "any");
    }

    #[test]
    fn manifest_table() {
        let manifest = Manifest::new("Shop", "1.0")
            .with_tool(
                ToolEntry::new("/pets", "GET", "list_pets", "List pets.").with_tags(["read"]),
            )
            .with_tool(ToolEntry::new(
                "/pets/{id}",
                "DELETE",
                "delete_pet",
                "x".repeat(100),
            ));
        let text = super::manifest(&manifest);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Shop 1.0");
        assert_eq!(
            lines[1],
            "METHOD  URL         NAME        TAGS  DESCRIPTION"
        );
        assert_eq!(lines[2], "GET     /pets       list_pets   read  List pets.");
        assert!(lines[3].ends_with('…'));
        // Columns of 8, 12, 12 and 6 characters, then the cut description.
        assert_eq!(lines[3].chars().count(), 38 + DESCRIPTION_WIDTH);
    }

    #[test]
    fn search_lines() {
        let tools = [
            ToolEntry::new("/weather", "GET", "get_weather", "Today's\nweather"),
            ToolEntry::new("/books/{id}", "DELETE", "delete_book", "x".repeat(100)),
        ];
        let text = found(&tools);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "get_weather  GET /weather        Today's weather");
        assert!(
            lines[1].starts_with("delete_book  DELETE /books/{id}  xxx"),
            "{text}"
        );
        assert!(lines[1].ends_with('…'));
        assert_eq!(lines.len(), 2);
        assert_eq!(found(&[]), "");
    }

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
    }

    #[test]
    fn schema_summary() {
        let mut s = ToolSchema::new(Call::new("GET", "/pets/{id}"));
        s.description = "Get one pet.".into();
        s.why = Some("Use with an id".into());
        s.input.insert(
            "id".into(),
            InputField::new(json!({"type": "integer", "description": "Pet id"}))
                .located(Location::Path)
                .required(true),
        );
        let text = schema(&s);
        assert!(
            text.starts_with("GET /pets/{id}\n  Get one pet.\n"),
            "{text}"
        );
        assert!(text.contains("  why:     Use with an id\n"), "{text}");
        assert!(text.contains("  auth:    none\n"), "{text}");
        assert!(
            text.contains("    NAME  IN    TYPE     REQUIRED  DESCRIPTION\n"),
            "{text}"
        );
        assert!(
            text.contains("    id    path  integer  yes       Pet id\n"),
            "{text}"
        );
    }
}
