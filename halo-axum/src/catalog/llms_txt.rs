//! `GET /llms.txt`: the tools a caller may call, as Markdown in the llmstxt.org format,
//! within a token budget.
//!
//! The format is an `# H1` with the site's name, a `> blockquote` that sums it up, free
//! text, then `## sections` of `- [name](url): notes` lists. Here the name is the API's
//! title and the summary its description's first paragraph; the text says how HALO
//! discovery works; each section is a tag, and each line a tool: its manifest name linking
//! its path, its method, its summary. A tool is listed once, under its first tag (the
//! domain, by the convention of tags such as `["books", "read"]`); tools without tags come
//! last, under "Other tools".
//!
//! The digest is for a model's context, so it has a budget (estimated with
//! [`halo_protocol::estimate_tokens`]). When every tool fits, every tool is listed. When
//! not, tags are taken by how many tools they have, most first, and each is either listed
//! whole or summarised in one line (`- tag: 37 tools`): the digest starts from every tag
//! summarised and lists in full each tag, in that order, that still fits. It then ends
//! with how many tools it lists of how many, and how to reach the rest: `OPTIONS /?q=words`
//! searches the tools, `OPTIONS /?tags=name` lists a tag's and `OPTIONS /` all of them (each
//! with `Accept: application/llm+json`). Only the caller's visible tools are counted,
//! grouped or named, so a hidden tool leaves no trace, not even in a tag's count.

use halo_protocol::{MEDIA_TYPE as HALO, estimate_tokens};

use super::{Site, clip, one_line};
use crate::registry::{Registry, Tool};

/// The media type of the digest.
pub(super) const MEDIA_TYPE: &str = "text/markdown";

/// The `Content-Type` of the digest.
pub(super) const CONTENT_TYPE: &str = "text/markdown; charset=utf-8";

/// The longest summary written for a tool, in characters.
const MAX_SUMMARY: usize = 160;

/// The longest blockquote under the title, in characters.
const MAX_ABSTRACT: usize = 400;

/// The section of the tools without tags.
const UNTAGGED: &str = "Other tools";

/// One tag's tools, rendered two ways.
struct Section {
    /// How many tools it lists.
    tools: usize,
    /// `## tag` and a line per tool.
    full: String,
    /// `- tag: N tools`, for the "Other tags" list.
    line: String,
}

/// The digest of the tools `visible` keeps, within `budget` tokens (beyond it only when the
/// title, summary and closing note alone pass it).
pub(super) fn render(
    site: &Site,
    registry: &Registry,
    visible: &dyn Fn(&Tool) -> bool,
    budget: usize,
) -> String {
    let tools: Vec<&Tool> = registry.tools().filter(|tool| visible(tool)).collect();
    let mut text = head(site, tools.len());
    let sections = sections(site, &tools);
    let whole: usize = sections.iter().map(|s| estimate_tokens(&s.full)).sum();
    if estimate_tokens(&text) + whole <= budget {
        for section in &sections {
            text.push_str(&section.full);
        }
        return text;
    }

    // The note's numbers are at most `total` wide, so this is its largest cost.
    let total = tools.len();
    let reserve = estimate_tokens(&rest(site, total, total, budget));
    let others = "\n## Other tags\n\n";
    let mut used = estimate_tokens(&text) + reserve + estimate_tokens(others);
    // Which sections are listed whole; the others are summarised in a line.
    let mut whole = vec![false; sections.len()];
    let lines: usize = sections.iter().map(|s| estimate_tokens(&s.line)).sum();
    if used + lines <= budget {
        used += lines;
        for (index, section) in sections.iter().enumerate() {
            let line = estimate_tokens(&section.line);
            let full = estimate_tokens(&section.full);
            if used - line + full <= budget {
                used = used - line + full;
                whole[index] = true;
            }
        }
    }
    let mut listed = 0;
    for (section, _) in sections.iter().zip(&whole).filter(|(_, whole)| **whole) {
        text.push_str(&section.full);
        listed += section.tools;
    }
    let summarised: Vec<&Section> = sections
        .iter()
        .zip(&whole)
        .filter(|(_, whole)| !**whole)
        .map(|(section, _)| section)
        .collect();
    if !summarised.is_empty() {
        // As many summary lines as fit, then how many tags are left, if any.
        let base = estimate_tokens(&text) + reserve + estimate_tokens(others);
        let mut lines = String::new();
        let mut cost = base;
        let mut shown = 0;
        for (index, section) in summarised.iter().enumerate() {
            let line = estimate_tokens(&section.line);
            let after = summarised.len() - index - 1;
            let tail = if after == 0 {
                0
            } else {
                estimate_tokens(&more_tags(after))
            };
            if cost + line + tail > budget {
                break;
            }
            lines.push_str(&section.line);
            cost += line;
            shown += 1;
        }
        let left = summarised.len() - shown;
        if shown > 0 || base + estimate_tokens(&more_tags(left)) <= budget {
            text.push_str(others);
            text.push_str(&lines);
            if left > 0 {
                text.push_str(&more_tags(left));
            }
        }
    }
    text.push_str(&rest(site, listed, total, budget));
    text
}

/// The last line of a summary that could not list `left` tags.
fn more_tags(left: usize) -> String {
    let noun = if left == 1 { "tag" } else { "tags" };
    format!("- and {left} more {noun}\n")
}

/// The title, the summary and how discovery works.
fn head(site: &Site, visible: usize) -> String {
    let manifest = site.href("/");
    let summary = site
        .description
        .split("\n\n")
        .map(one_line)
        .find(|paragraph| !paragraph.is_empty())
        .map_or_else(
            || format!("The tools of {}, for agents.", site.name()),
            |paragraph| clip(&paragraph, MAX_ABSTRACT),
        );
    let mut text = format!("# {}\n\n> {summary}\n\n", site.name());
    text.push_str(&format!(
        "This API describes itself to agents with HALO: `OPTIONS {manifest}` with \
         `Accept: {HALO}` lists the tools you may call, `OPTIONS {manifest}?q=words` searches \
         them and `OPTIONS {manifest}?tags=name` filters them by tag; `OPTIONS` on a tool's \
         path (same `Accept`) gives its schema: inputs, effects, limits and examples. Each \
         line below is a tool: its name, linking its path, then its method and what it \
         does.\n"
    ));
    if visible == 0 {
        text.push_str("\nNo tool of this API is visible to you.\n");
    }
    text
}

/// The closing note of a digest that lists `listed` of the `total` tools.
fn rest(site: &Site, listed: usize, total: usize, budget: usize) -> String {
    let manifest = site.href("/");
    format!(
        "\n## Finding the rest\n\nThis digest lists {listed} of the {total} tools you may \
         call, to stay within about {budget} tokens. Search them by what they do with \
         `OPTIONS {manifest}?q=words`, list a tag's with `OPTIONS {manifest}?tags=name`, or \
         all of them with `OPTIONS {manifest}`, each with `Accept: {HALO}`.\n"
    )
}

/// The tools grouped by first tag, the tags with the most tools first (then in the order
/// the document first uses them), untagged tools last.
fn sections(site: &Site, tools: &[&Tool]) -> Vec<Section> {
    let mut groups: Vec<(Option<&str>, Vec<&Tool>)> = Vec::new();
    for tool in tools {
        let tag = tool.entry().tags.first().map(String::as_str);
        match groups.iter_mut().find(|(known, _)| *known == tag) {
            Some((_, members)) => members.push(tool),
            None => groups.push((tag, vec![tool])),
        }
    }
    groups.sort_by_key(|(tag, members)| (tag.is_none(), std::cmp::Reverse(members.len())));
    groups
        .into_iter()
        .map(|(tag, members)| {
            let heading = tag.map_or_else(|| UNTAGGED.to_owned(), one_line);
            let mut full = format!("\n## {heading}\n\n");
            for tool in &members {
                full.push_str(&line(site, tool));
            }
            let count = members.len();
            let noun = if count == 1 { "tool" } else { "tools" };
            Section {
                tools: count,
                line: format!("- {heading}: {count} {noun}\n"),
                full,
            }
        })
        .collect()
}

/// `- [name](path): METHOD. Summary.`
fn line(site: &Site, tool: &Tool) -> String {
    let entry = tool.entry();
    let summary = [
        entry.description.as_str(),
        entry.title.as_deref().unwrap_or_default(),
    ]
    .into_iter()
    .map(one_line)
    .find(|text| !text.is_empty());
    let url = if entry.url.starts_with('/') {
        site.href(&entry.url)
    } else {
        entry.url.clone()
    };
    let target = link_target(&url);
    match summary {
        Some(summary) => format!(
            "- [{}]({target}): {}. {}\n",
            entry.name,
            entry.method,
            clip(&summary, MAX_SUMMARY)
        ),
        None => format!("- [{}]({target}): {}.\n", entry.name, entry.method),
    }
}

/// A URL as a Markdown link target: the characters that would end it percent-encoded.
fn link_target(url: &str) -> String {
    let mut target = String::with_capacity(url.len());
    for c in url.chars() {
        match c {
            '(' => target.push_str("%28"),
            ')' => target.push_str("%29"),
            '<' => target.push_str("%3C"),
            '>' => target.push_str("%3E"),
            c if c.is_whitespace() => target.push_str("%20"),
            c => target.push(c),
        }
    }
    target
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_targets_stay_one_link() {
        assert_eq!(link_target("/a (b)/{id}"), "/a%20%28b%29/{id}");
        assert_eq!(
            link_target("https://x.example/pets"),
            "https://x.example/pets"
        );
    }
}
