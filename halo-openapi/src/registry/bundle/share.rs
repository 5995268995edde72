//! Subschemas the document writes out more than once, served once.
//!
//! Real documents repeat large subschemas word for word where no named type stands behind
//! them: Stripe spells out the same 300 merchant categories in twelve places, and the same
//! `setup_future_usage` text in thirty; generators inline a shared type at every use. A
//! served schema that reaches such a subschema twice would carry it twice, while a named
//! definition is carried once. So a subschema of the components that the document repeats
//! is treated as a definition of its own: found here, once per document, and bundled like
//! the targets of `$ref`s (served under `$defs` when used more than once, copied in place
//! when a schema reaches it only once).
//!
//! What counts as the same is what is served: vendor extensions (`x-…`), which are not
//! served, are left out of the comparison. Only subschemas of at least [`MIN_BYTES`] are
//! shared: below that a reference would save little and hide a property's type from a
//! reader. The largest repeats are taken first; a repeat found only inside copies of a
//! larger one that is already shared needs nothing more.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, HashSet};
use std::hash::{Hash, Hasher};

use serde_json::Value;

use super::walk::{Keys, Read};

/// The fewest bytes (minified, as served) of a subschema worth sharing: a reference and its
/// `$defs` entry cost about 40.
const MIN_BYTES: usize = 256;

/// The repeated subschemas of one document's components.
#[derive(Debug, Default)]
pub(super) struct Shares<'d> {
    /// Each occurrence (by its address in the document) and the share it is.
    at: HashMap<usize, u32>,
    list: Vec<Share<'d>>,
    /// The names of the document's components, which shares do not take.
    components: HashSet<&'d str>,
}

/// One repeated subschema.
#[derive(Debug)]
pub(super) struct Share<'d> {
    /// Its first occurrence.
    pub(super) body: &'d Value,
    /// What to call it: its `title`, or the property it was first found under.
    pub(super) name: &'d str,
    /// Where its first occurrence is: a JSON Pointer into the document.
    pub(super) pointer: String,
}

/// The pointer tokens from a node's parent to it.
#[derive(Debug, Clone, Copy)]
enum Steps<'d> {
    /// A component: `/components/schemas/{name}`.
    Component(&'d str),
    /// `/{keyword}`.
    Keyword(&'d str),
    /// `/{keyword}/{name}`, in `properties` and the like.
    Named(&'d str, &'d str),
    /// `/{keyword}/{index}`, in `anyOf` and the like.
    Item(&'d str, usize),
}

/// An object in schema position, found on the way through the components.
#[derive(Debug)]
struct Node<'d> {
    value: &'d Value,
    name: &'d str,
    /// The node it is in (itself for a component), and the tokens from there to it.
    parent: usize,
    steps: Steps<'d>,
    /// Where its subtree's nodes end in the walk's order (its own index is where they start).
    end: usize,
    hash: u64,
    size: usize,
    /// Whether it may be replaced by a reference.
    eligible: bool,
}

impl<'d> Shares<'d> {
    /// Finds the repeats among the subschemas of `document`'s components, looking no deeper
    /// than `max_depth` (deeper documents are refused later, with the pointer).
    pub(super) fn find(document: &'d Value, max_depth: usize) -> Self {
        let Some(Value::Object(schemas)) = document.pointer("/components/schemas") else {
            return Self::default();
        };
        let mut walk = Walk {
            nodes: Vec::new(),
            max_depth,
        };
        for (name, schema) in schemas {
            let at = Place {
                parent: usize::MAX,
                steps: Steps::Component(name),
                depth: 0,
                eligible: false,
            };
            walk.visit(schema, name, at);
        }
        let mut shares = Self {
            components: schemas.keys().map(String::as_str).collect(),
            ..Self::default()
        };
        shares.choose(&walk.nodes);
        shares
    }

    /// Picks the repeats, largest first.
    fn choose(&mut self, nodes: &[Node<'d>]) {
        let mut groups: HashMap<(u64, usize), Vec<usize>> = HashMap::new();
        for (index, node) in nodes.iter().enumerate() {
            if node.eligible && node.size >= MIN_BYTES {
                groups
                    .entry((node.hash, node.size))
                    .or_default()
                    .push(index);
            }
        }
        let mut groups: Vec<Vec<usize>> = groups.into_values().filter(|g| g.len() > 1).collect();
        groups.sort_unstable_by_key(|group| (std::cmp::Reverse(nodes[group[0]].size), group[0]));
        let mut covered = vec![false; nodes.len()];
        for group in groups {
            let mut left: Vec<usize> = group.into_iter().filter(|&i| !covered[i]).collect();
            // Equal hashes are not proof: each class of equal subschemas is its own share.
            while left.len() > 1 {
                let first = left[0];
                let (same, rest): (Vec<usize>, Vec<usize>) = left
                    .into_iter()
                    .partition(|&i| same(nodes[first].value, nodes[i].value, Keys::Keywords));
                left = rest;
                if same.len() < 2 {
                    continue;
                }
                let share = u32::try_from(self.list.len()).unwrap_or(u32::MAX);
                self.list.push(Share {
                    body: nodes[first].value,
                    name: nodes[first].name,
                    pointer: pointer(nodes, first),
                });
                for &occurrence in &same {
                    self.at.insert(address(nodes[occurrence].value), share);
                }
                // The other copies become references: nothing inside them is served.
                for &occurrence in &same[1..] {
                    covered[occurrence + 1..nodes[occurrence].end].fill(true);
                }
            }
        }
    }

    /// The share `value` is an occurrence of, if it is one.
    pub(super) fn of(&self, value: &Value) -> Option<u32> {
        if self.at.is_empty() {
            return None;
        }
        self.at.get(&address(value)).copied()
    }

    /// The share numbered `index`.
    pub(super) fn get(&self, index: u32) -> &Share<'d> {
        &self.list[index as usize]
    }

    /// Whether `name` is the name of one of the document's components.
    pub(super) fn is_component(&self, name: &str) -> bool {
        self.components.contains(name)
    }
}

/// The JSON Pointer (in a URI fragment) of the node at `index`.
fn pointer(nodes: &[Node<'_>], mut index: usize) -> String {
    let escape = |token: &str| halo_protocol::escape_token(token).into_owned();
    let mut tokens = Vec::new();
    loop {
        let node = &nodes[index];
        match node.steps {
            Steps::Component(name) => {
                tokens.push(escape(name));
                tokens.extend(["schemas".to_owned(), "components".to_owned()]);
                break;
            }
            Steps::Keyword(keyword) => tokens.push(keyword.to_owned()),
            Steps::Named(keyword, name) => tokens.extend([escape(name), keyword.to_owned()]),
            Steps::Item(keyword, i) => tokens.extend([i.to_string(), keyword.to_owned()]),
        }
        index = node.parent;
    }
    let mut pointer = String::from("#");
    for token in tokens.iter().rev() {
        pointer.push('/');
        pointer.push_str(token);
    }
    pointer
}

fn address(value: &Value) -> usize {
    std::ptr::from_ref(value) as usize
}

/// The walk through the components, recording every object in schema position.
struct Walk<'d> {
    nodes: Vec<Node<'d>>,
    max_depth: usize,
}

/// Where a value is met: in which node, by which tokens, how deep, and whether a
/// reference may stand for it there.
#[derive(Debug, Clone, Copy)]
struct Place<'d> {
    parent: usize,
    steps: Steps<'d>,
    depth: usize,
    eligible: bool,
}

impl<'d> Walk<'d> {
    /// Records `value` (a schema met at `at`) and what it holds. Gives its hash and its size
    /// as served.
    fn visit(&mut self, value: &'d Value, name: &'d str, at: Place<'d>) -> (u64, usize) {
        let Value::Object(map) = value else {
            return data(value);
        };
        if at.depth > self.max_depth {
            // Never equal to anything: the document is refused for its depth anyway.
            return (address(value) as u64, 0);
        }
        let index = self.nodes.len();
        let name = match map.get("title") {
            Some(Value::String(title)) if is_plain(title) => title.as_str(),
            _ => name,
        };
        self.nodes.push(Node {
            value,
            name,
            parent: if at.parent == usize::MAX {
                index
            } else {
                at.parent
            },
            steps: at.steps,
            end: index,
            hash: 0,
            size: 0,
            eligible: at.eligible && !map.contains_key("$ref"),
        });
        let mut hasher = DefaultHasher::new();
        let mut size = 2;
        let mut written = 0;
        for (key, inner) in map {
            let (hash, bytes) = match Keys::Keywords.read(key) {
                Read::Extension => continue,
                Read::Reference | Read::Data => data(inner),
                Read::Schema(Keys::Names) => self.names(key, inner, index, at.depth),
                Read::Schema(Keys::Keywords) => self.keyword(key, inner, name, index, at.depth),
            };
            key.hash(&mut hasher);
            hash.hash(&mut hasher);
            size += key.len() + 3 + bytes + usize::from(written > 0);
            written += 1;
        }
        let end = self.nodes.len();
        let node = &mut self.nodes[index];
        node.end = end;
        node.hash = hasher.finish();
        node.size = size;
        (node.hash, size)
    }

    /// A map of names to schemas (`properties`, `$defs`, ...) under `keyword` of the node at
    /// `parent`: each a schema that may be shared, named by its key.
    fn names(
        &mut self,
        keyword: &'d str,
        value: &'d Value,
        parent: usize,
        depth: usize,
    ) -> (u64, usize) {
        let Value::Object(map) = value else {
            return data(value);
        };
        let mut hasher = DefaultHasher::new();
        let mut size = 2;
        for (i, (key, inner)) in map.iter().enumerate() {
            let at = Place {
                parent,
                steps: Steps::Named(keyword, key),
                depth: depth + 2,
                eligible: true,
            };
            let (hash, bytes) = self.visit(inner, key, at);
            key.hash(&mut hasher);
            hash.hash(&mut hasher);
            size += key.len() + 3 + bytes + usize::from(i > 0);
        }
        (hasher.finish(), size)
    }

    /// The value of `keyword` of the node at `parent` when it holds a schema or schemas
    /// (`items`, `anyOf`, ...), or a part of one (`discriminator`, which is no schema and so
    /// is never shared).
    fn keyword(
        &mut self,
        keyword: &'d str,
        value: &'d Value,
        name: &'d str,
        parent: usize,
        depth: usize,
    ) -> (u64, usize) {
        let eligible = is_schema_keyword(keyword);
        match value {
            Value::Array(items) => {
                let mut hasher = DefaultHasher::new();
                let mut size = 2;
                for (i, item) in items.iter().enumerate() {
                    let at = Place {
                        parent,
                        steps: Steps::Item(keyword, i),
                        depth: depth + 2,
                        eligible,
                    };
                    let (hash, bytes) = self.visit(item, name, at);
                    hash.hash(&mut hasher);
                    size += bytes + usize::from(i > 0);
                }
                (hasher.finish(), size)
            }
            _ => {
                let at = Place {
                    parent,
                    steps: Steps::Keyword(keyword),
                    depth: depth + 1,
                    eligible,
                };
                self.visit(value, name, at)
            }
        }
    }
}

/// The hash and size of instance data (or of anything that is not an object in schema
/// position), as served.
fn data(value: &Value) -> (u64, usize) {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    (hasher.finish(), bytes.len())
}

/// Whether two schemas are the same as served: equal but for vendor extensions.
fn same(a: &Value, b: &Value, keys: Keys) -> bool {
    if std::ptr::eq(a, b) {
        return true;
    }
    match (a, b) {
        (Value::Object(a), Value::Object(b)) => {
            let (a, b) = (served(a, keys), served(b, keys));
            a.len() == b.len()
                && a.iter().zip(&b).all(|((ka, va), (kb, vb))| {
                    ka == kb
                        && match keys.read(ka) {
                            Read::Schema(inner) => same(va, vb, inner),
                            _ => va == vb,
                        }
                })
        }
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(a, b)| same(a, b, Keys::Keywords))
        }
        _ => a == b,
    }
}

/// The entries of a schema object that are served.
fn served(map: &serde_json::Map<String, Value>, keys: Keys) -> Vec<(&String, &Value)> {
    map.iter()
        .filter(|(key, _)| keys.read(key) != Read::Extension)
        .collect()
}

/// The keywords whose value is a schema, or an array of schemas, that a reference may stand
/// for.
fn is_schema_keyword(key: &str) -> bool {
    matches!(
        key,
        "items"
            | "additionalProperties"
            | "anyOf"
            | "oneOf"
            | "allOf"
            | "not"
            | "prefixItems"
            | "contains"
            | "if"
            | "then"
            | "else"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems"
            | "additionalItems"
    )
}

/// A title that makes a good definition name: short, in plain characters.
fn is_plain(title: &str) -> bool {
    !title.is_empty()
        && title.len() <= 64
        && title
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}
