//! Matching request paths against the document's path templates.
//!
//! Most templates are what axum's router takes (`/books/{id}`), and go to the same router,
//! `matchit`. The others have literal text beside a parameter in one segment
//! (`/Accounts/{Sid}.json`, `/v{version}/items`) or several parameters in one segment
//! (`/{owner}.{repo}`), which `matchit` cannot express: each of those becomes an anchored
//! regular expression, all of them tried at once with a `RegexSet`, whose matching is
//! linear in the path. When both kinds match a path, the template with more literal text
//! (the more specific one) wins.

use regex::bytes::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

/// The most memory the compiled expressions may take (the `regex` crate's default is 10 MiB;
/// thousands of suffix templates need more).
const REGEX_SIZE: usize = 256 * 1024 * 1024;

/// The path templates of one registry, each with the index of its path entry.
#[derive(Debug)]
pub(crate) struct Templates {
    router: matchit::Router<usize>,
    /// The literal length of each entry's template, by index.
    literal: Vec<usize>,
    patterns: Vec<Pattern>,
    set: RegexSet,
    /// The parameters of each entry's template, in their order in it.
    names: Vec<Vec<Box<str>>>,
}

#[derive(Debug)]
struct Pattern {
    regex: Regex,
    index: usize,
    literal: usize,
}

/// The raw (still percent-encoded) values of a matched path's parameters, by name.
pub(crate) type Params<'t, 'p> = Vec<(&'t str, &'p str)>;

/// A request path matched to a template, owning nothing of either: the entry's index, and
/// where each of the template's parameters is in the path, in the template's order.
#[derive(Debug, Clone, Default)]
pub(crate) struct Matched {
    pub(crate) index: usize,
    values: Vec<std::ops::Range<usize>>,
}

/// What the templates are built from.
#[derive(Debug, Default)]
pub(crate) struct TemplatesBuilder {
    router: matchit::Router<usize>,
    literal: Vec<usize>,
    patterns: Vec<(String, Pattern)>,
    /// The expressions so far, and the template each came from.
    expressions: std::collections::HashMap<String, String>,
    names: Vec<Vec<Box<str>>>,
}

impl TemplatesBuilder {
    /// Adds a template (the path key of the document without any `#fragment`) for the entry
    /// at `index`.
    pub(crate) fn insert(&mut self, template: &str, index: usize) -> Result<(), String> {
        let segments = parse(template)?;
        let simple = segments
            .iter()
            .all(|segment| matches!(segment[..], [Piece::Literal(_)] | [Piece::Param(_)] | []));
        let literal = segments
            .iter()
            .flatten()
            .map(|piece| match piece {
                Piece::Literal(text) => text.len(),
                Piece::Param(_) => 0,
            })
            .sum::<usize>()
            + segments.len();
        if self.literal.len() <= index {
            self.literal.resize(index + 1, 0);
            self.names.resize(index + 1, Vec::new());
        }
        self.literal[index] = literal;
        self.names[index] = segments
            .iter()
            .flatten()
            .filter_map(|piece| match piece {
                // `{*rest}` is `rest` to `matchit`.
                Piece::Param(name) => Some(name.trim_start_matches('*').into()),
                Piece::Literal(_) => None,
            })
            .collect();
        if simple {
            return self
                .router
                .insert(template, index)
                .map_err(|e| e.to_string());
        }
        let mut expression = String::from("^");
        let mut names = Vec::new();
        for segment in &segments {
            expression.push('/');
            for piece in segment {
                match piece {
                    Piece::Literal(text) => expression.push_str(&regex::escape(text)),
                    Piece::Param(name) => {
                        if names.contains(name) {
                            return Err(format!("parameter `{name}` appears twice"));
                        }
                        names.push(name.clone());
                        expression.push_str("([^/]+)");
                    }
                }
            }
        }
        expression.push('$');
        if let Some(other) = self.expressions.get(&expression) {
            return Err(format!("it matches the same paths as {other:?}"));
        }
        self.expressions
            .insert(expression.clone(), template.to_owned());
        let regex = RegexBuilder::new(&expression)
            .unicode(false)
            .size_limit(REGEX_SIZE)
            .build()
            .map_err(|e| e.to_string())?;
        self.patterns.push((
            expression,
            Pattern {
                regex,
                index,
                literal,
            },
        ));
        Ok(())
    }

    pub(crate) fn build(self) -> Result<Templates, String> {
        // Request paths are ASCII (percent-encoded), so the expressions match bytes.
        let set = RegexSetBuilder::new(self.patterns.iter().map(|(expression, _)| expression))
            .unicode(false)
            .size_limit(REGEX_SIZE)
            .build()
            .map_err(|e| e.to_string())?;
        Ok(Templates {
            router: self.router,
            literal: self.literal,
            patterns: self.patterns.into_iter().map(|(_, p)| p).collect(),
            set,
            names: self.names,
        })
    }
}

/// The template a path matched.
enum Found<'t, 'p> {
    Plain(matchit::Match<'t, 'p, &'t usize>),
    Pattern(&'t Pattern),
}

impl Templates {
    /// The index of the entry a request path is one of.
    #[inline] // On the pass-through path of `Halo::call`.
    pub(crate) fn index(&self, path: &str) -> Option<usize> {
        Some(match self.find(path)? {
            Found::Plain(matched) => *matched.value,
            Found::Pattern(pattern) => pattern.index,
        })
    }

    /// The entry a request path is one of, and where its parameters are in it.
    pub(crate) fn at(&self, path: &str) -> Option<Matched> {
        let offset = |value: &str| {
            let start = value.as_ptr() as usize - path.as_ptr() as usize;
            start..start + value.len()
        };
        Some(match self.find(path)? {
            Found::Plain(matched) => {
                let index = *matched.value;
                let values = self.names[index]
                    .iter()
                    .filter_map(|name| matched.params.get(name).map(offset))
                    .collect();
                Matched { index, values }
            }
            Found::Pattern(pattern) => Matched {
                index: pattern.index,
                values: capture(pattern, path),
            },
        })
    }

    /// The parameters of a path `matched` was matched from: each name with its raw value.
    pub(crate) fn params<'t, 'p>(&'t self, matched: &Matched, path: &'p str) -> Params<'t, 'p> {
        let names = self.names.get(matched.index).map_or(&[][..], Vec::as_slice);
        names
            .iter()
            .zip(&matched.values)
            .filter_map(|(name, range)| Some((&**name, path.get(range.clone())?)))
            .collect()
    }

    #[inline]
    fn find<'t, 'p>(&'t self, path: &'p str) -> Option<Found<'t, 'p>> {
        let plain = self.router.at(path).ok();
        if self.patterns.is_empty() {
            return plain.map(Found::Plain);
        }
        let best = self
            .set
            .matches(path.as_bytes())
            .iter()
            .map(|i| &self.patterns[i])
            .max_by_key(|pattern| pattern.literal);
        match (plain, best) {
            (Some(plain), Some(best)) if self.literal[*plain.value] < best.literal => {
                Some(Found::Pattern(best))
            }
            (Some(plain), _) => Some(Found::Plain(plain)),
            (None, best) => best.map(Found::Pattern),
        }
    }
}

/// Where each parameter of `pattern` is in `path`, in the template's order.
fn capture(pattern: &Pattern, path: &str) -> Vec<std::ops::Range<usize>> {
    pattern
        .regex
        .captures(path.as_bytes())
        .map(|captures| {
            captures
                .iter()
                .skip(1)
                .map(|value| value.map_or(0..0, |value| value.range()))
                .collect()
        })
        .unwrap_or_default()
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Literal(String),
    Param(String),
}

/// The segments of a template, each a run of literal text and `{parameters}`.
fn parse(template: &str) -> Result<Vec<Vec<Piece>>, String> {
    let Some(rest) = template.strip_prefix('/') else {
        return Err("a path template starts with `/`".to_owned());
    };
    rest.split('/')
        .map(|segment| {
            let mut pieces = Vec::new();
            let mut rest = segment;
            while !rest.is_empty() {
                match rest.find(['{', '}']) {
                    Some(0) if rest.starts_with('{') => {
                        let close = rest
                            .find('}')
                            .ok_or_else(|| format!("`{{` without `}}` in {segment:?}"))?;
                        let name = &rest[1..close];
                        if name.is_empty() || name.contains('{') {
                            return Err(format!("a parameter without a name in {segment:?}"));
                        }
                        if matches!(pieces.last(), Some(Piece::Param(_))) {
                            return Err(format!(
                                "two parameters with nothing between them in {segment:?}"
                            ));
                        }
                        pieces.push(Piece::Param(name.to_owned()));
                        rest = &rest[close + 1..];
                    }
                    Some(0) => return Err(format!("`}}` without `{{` in {segment:?}")),
                    found => {
                        let end = found.unwrap_or(rest.len());
                        pieces.push(Piece::Literal(rest[..end].to_owned()));
                        rest = &rest[end..];
                    }
                }
            }
            Ok(pieces)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates(list: &[&str]) -> Templates {
        let mut builder = TemplatesBuilder::default();
        for (index, template) in list.iter().enumerate() {
            builder.insert(template, index).unwrap();
        }
        builder.build().unwrap()
    }

    fn at<'t, 'p>(
        templates: &'t Templates,
        path: &'p str,
    ) -> Option<(usize, Vec<(&'t str, &'p str)>)> {
        let matched = templates.at(path)?;
        Some((matched.index, templates.params(&matched, path)))
    }

    #[test]
    fn literal_text_beside_parameters() {
        let t = templates(&[
            "/2010-04-01/Accounts/{Sid}.json",
            "/2010-04-01/Accounts/{AccountSid}/Calls/{Sid}.json",
            "/2010-04-01/Accounts/{AccountSid}/Calls.json",
            "/v{version}/items",
            "/{owner}.{repo}/readme",
            "/files/{id}",
            "/files/latest.json",
        ]);
        assert_eq!(
            at(&t, "/2010-04-01/Accounts/AC1.json"),
            Some((0, vec![("Sid", "AC1")]))
        );
        assert_eq!(
            at(&t, "/2010-04-01/Accounts/AC1/Calls/CA9.json"),
            Some((1, vec![("AccountSid", "AC1"), ("Sid", "CA9")]))
        );
        assert_eq!(
            at(&t, "/2010-04-01/Accounts/AC1/Calls.json"),
            Some((2, vec![("AccountSid", "AC1")]))
        );
        assert_eq!(at(&t, "/v2/items"), Some((3, vec![("version", "2")])));
        assert_eq!(
            at(&t, "/halo.rs/readme"),
            Some((4, vec![("owner", "halo"), ("repo", "rs")]))
        );
        // The more specific template wins: a static one over a suffix one over a bare one.
        assert_eq!(at(&t, "/files/7"), Some((5, vec![("id", "7")])));
        assert_eq!(at(&t, "/files/latest.json"), Some((6, vec![])));
        for path in [
            "/2010-04-01/Accounts/.json",
            "/2010-04-01/Accounts/AC1.xml",
            "/2010-04-01/Accounts/a/b.json",
            "/v/items",
            "/items",
            "/2010-04-01/Accounts/AC1.json/x",
        ] {
            assert_eq!(at(&t, path), None, "{path}");
        }
    }

    #[test]
    fn names_differing_at_one_place_both_match() {
        let t = templates(&["/users/{id}", "/users/{userId}/posts", "/v1/{name}:cancel"]);
        assert_eq!(at(&t, "/users/7"), Some((0, vec![("id", "7")])));
        assert_eq!(at(&t, "/users/7/posts"), Some((1, vec![("userId", "7")])));
        assert_eq!(at(&t, "/v1/op-1:cancel"), Some((2, vec![("name", "op-1")])));
    }

    #[test]
    fn thousands_of_suffix_templates_and_text_beyond_ascii() {
        let list: Vec<String> = (0..2000)
            .map(|i| format!("/r{i}/{{id}}.json"))
            .chain(["/caf\u{e9}/{id}.txt".to_owned()])
            .collect();
        let refs: Vec<&str> = list.iter().map(String::as_str).collect();
        let t = templates(&refs);
        assert_eq!(at(&t, "/r1999/x.json"), Some((1999, vec![("id", "x")])));
        assert_eq!(
            at(&t, "/caf\u{e9}/\u{e9}t\u{e9}.txt"),
            Some((2000, vec![("id", "\u{e9}t\u{e9}")]))
        );
    }

    #[test]
    fn malformed_templates_are_refused() {
        for template in ["/a/{", "/a/}", "/a/{}", "/a/{x}{y}", "a", "/a/{x}.{x}"] {
            let mut builder = TemplatesBuilder::default();
            assert!(builder.insert(template, 0).is_err(), "{template}");
        }
        let mut builder = TemplatesBuilder::default();
        builder.insert("/a/{x}.json", 0).unwrap();
        assert!(builder.insert("/a/{y}.json", 1).is_err());
    }
}
