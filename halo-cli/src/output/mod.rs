//! Readable text for people: tables, schema summaries, responses, problems, events and
//! diffs; and writing it to standard output and standard error.
//!
//! Everything a server sent is untrusted: control characters (terminal escape sequences
//! among them) are replaced before anything is printed.

mod response;
mod schema;

use std::fmt::Write as _;
use std::io::Write as _;

use halo_client::protocol::{Manifest, ToolEntry};
use halo_client::{Pin, PinDiff};
use serde::Serialize;
use serde_json::Value;

pub(crate) use response::{error_response, event, event_line, response};
pub(crate) use schema::schema;

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

pub(crate) fn compact(value: &Value) -> String {
    line(&value.to_string())
}

/// Aligned columns; the last one is not padded.
pub(crate) fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
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

/// Writes to stdout; a closed pipe (`halo ... | head`) is not an error worth a panic.
pub(crate) fn print_out(text: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = stdout.write_all(text.as_bytes());
    let _ = stdout.flush();
}

/// Writes to stderr, ignoring a closed stream.
pub(crate) fn print_err(text: &str) {
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
