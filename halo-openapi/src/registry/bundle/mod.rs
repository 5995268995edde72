//! Bundling `$ref`s into self-contained JSON Schemas, in time and memory linear in the
//! document.
//!
//! OpenAPI generators write `{"$ref": "#/components/schemas/Book"}` wherever a named type
//! appears. A served schema must stand alone, so each one carries the definitions it reaches
//! under its own `$defs`, each definition once however often it is used and however cyclic
//! the references are. A definition is written inline instead where that is smaller or
//! clearer: where the document uses it once, or where it is a tiny leaf (`{"type":
//! "string", "format": "date-time"}`), and never where it is recursive.
//!
//! Every decision is made once per document, so a definition reads the same in every
//! schema and is serialised once: the served schemas share those bytes
//! ([`Bundler::defs_rope`]). Each referenced target is walked once; there is no expansion
//! along paths of the reference graph, which is what made a cyclic document explode.
//!
//! A subschema the document writes out again and again without naming it is a definition
//! too ([`share`]): found once per document, bundled like the target of a reference.
//!
//! The parts: how a schema is read ([`walk`]), the graph of the targets its references reach
//! and the order they are bundled in ([`graph`]), a body rewritten ([`rewrite`]) with the
//! last touches of its direction and OpenAPI version ([`adjust`]), and the definitions named
//! and served under `$defs` ([`defs`]).

mod adjust;
mod defs;
mod graph;
mod rewrite;
mod share;
#[cfg(test)]
mod tests;
mod tool_defs;
mod walk;

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};

use serde_json::Value;

use self::adjust::adjust;
pub(crate) use self::adjust::nullable;
use self::rewrite::{done, rewrite, rewrite_value};
use self::share::Shares;
use self::walk::{pointer_lookup, reference_of};
use super::rope::Rope;
use crate::{BuildError, DocumentLimits};

/// Nested deeper than this inside its site, a definition used once stays in `$defs`: inlining
/// must not make a schema much deeper than its document.
const MAX_INLINE_DEPTH: usize = 32;

/// Why a schema could not be bundled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Problem {
    /// A reference that points nowhere in the document (or outside it).
    Unresolved(String),
    /// A limit of [`DocumentLimits`] was passed at a pointer.
    Limit {
        /// Where: a JSON Pointer into the document, or into the operation's schema.
        at: String,
        /// Which limit: the name of the [`DocumentLimits`] setter.
        limit: &'static str,
        /// Its value.
        value: usize,
    },
    /// References that lead only to each other, with no schema among them.
    EmptyCycle(String),
}

impl Problem {
    /// The error of the operation labelled `operation` whose schema this stopped.
    pub(crate) fn into_error(self, operation: &str) -> BuildError {
        match self {
            Self::Unresolved(reference) => BuildError::unresolved(operation, reference),
            Self::EmptyCycle(reference) => BuildError::document(format!(
                "{operation}: `$ref` {reference:?} leads only to references, back to itself"
            )),
            Self::Limit { at, limit, value } => BuildError::limit(operation, at, limit, value),
        }
    }
}

/// What a schema that is a reference to a recursive definition becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Root {
    /// The reference, the definition under `$defs` once: the smallest.
    Reference,
    /// The definition's body, as for any other definition: for a request body, whose
    /// properties become input entries.
    Body,
}

/// Which way a schema describes data: what a caller sends, or what it gets back. Properties
/// marked `readOnly` are left out of input, `writeOnly` ones out of output, so a definition
/// can read two ways, each bundled once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    Input = 0,
    Output = 1,
}

/// How one schema is rewritten.
#[derive(Debug, Clone, Copy)]
struct Pass {
    direction: Direction,
    /// The document is OpenAPI 3.0, whose `nullable` becomes JSON Schema's `null` type.
    nullable: bool,
}

impl Pass {
    fn at(self) -> usize {
        self.direction as usize
    }
}

/// A referenced target, identified by its index.
type Id = u32;

/// What a schema refers to: a place in the document (a `$ref`), or a subschema the document
/// repeats ([`share`]).
#[derive(Debug, Clone, Copy)]
enum Link<'d> {
    Reference(&'d str),
    Shared(u32),
}

#[derive(Debug)]
struct Target<'d> {
    /// The `$ref` that named it, or a shared subschema's name.
    reference: &'d str,
    /// A subschema the document repeats, not a `$ref`'s target.
    shared: bool,
    body: &'d Value,
    /// How many references name it, over every schema walked.
    uses: u32,
    /// The targets its body references (with repeats).
    edges: Vec<Id>,
    /// Set once its body is bundled, for each [`Direction`].
    done: [Option<Done>; 2],
    /// Its name under `$defs`, once some schema refers to it there.
    name: Option<String>,
    /// `"name":{…}`, serialised on first use, for each [`Direction`].
    piece: [Option<Rope>; 2],
}

#[derive(Debug)]
struct Done {
    /// The body with every reference rewritten or inlined.
    body: Value,
    /// Part of a reference cycle (itself included).
    recursive: bool,
    /// Copied to its uses instead of referred to.
    inline: bool,
    /// How deeply its bundled body nests.
    depth: usize,
    /// The definitions its bundled body refers to (`#/$defs/...`), each once.
    deps: Vec<Id>,
    /// In a lenient build, the target of a cycle of bare references it reaches (itself
    /// included): it has no body, and no schema that reaches it is served.
    broken: Option<Id>,
}

/// Definition ids in the order first met, each once.
#[derive(Debug, Default)]
struct Ids {
    list: Vec<Id>,
    seen: HashSet<Id>,
}

impl Ids {
    fn add(&mut self, id: Id) {
        if self.seen.insert(id) {
            self.list.push(id);
        }
    }
}

#[derive(Debug, Default)]
struct State<'d> {
    targets: Vec<Target<'d>>,
    by_reference: HashMap<&'d str, Id>,
    /// The targets of the shared subschemas, by share.
    by_share: HashMap<u32, Id>,
    shares: Shares<'d>,
    by_name: HashMap<String, Id>,
    /// Targets interned since the last bundling, for each [`Direction`].
    unfinished: [Vec<Id>; 2],
    /// The next suffix to try for a name already taken (`Name_2`, `Name_3`, …).
    suffixes: HashMap<String, usize>,
    /// Definitions referenced by `$defs` across every schema served so far.
    defs_served: usize,
}

impl<'d> State<'d> {
    /// The target a link names, once interned.
    fn id(&self, link: Link<'d>) -> Option<Id> {
        match link {
            Link::Reference(reference) => self.by_reference.get(reference).copied(),
            Link::Shared(share) => self.by_share.get(&share).copied(),
        }
    }
}

/// Bundles the schemas of one OpenAPI document.
#[derive(Debug)]
pub(crate) struct Bundler<'d> {
    document: &'d Value,
    limits: DocumentLimits,
    /// OpenAPI 3.0 (`nullable`), rather than 3.1 (JSON Schema as it is).
    openapi_30: bool,
    /// Whether a cycle of bare references fails only the schemas that reach it, rather than
    /// the first schema bundled ([`RegistryBuilder::lenient`](crate::RegistryBuilder::lenient)).
    lenient: bool,
    state: RefCell<State<'d>>,
}

impl<'d> Bundler<'d> {
    pub(crate) fn new(document: &'d Value, limits: DocumentLimits, lenient: bool) -> Self {
        let version = document.get("openapi").and_then(Value::as_str);
        Self {
            document,
            limits,
            lenient,
            openapi_30: version.is_some_and(|version| version.starts_with("3.0")),
            state: RefCell::new(State {
                shares: Shares::find(document, limits.max_depth),
                ..State::default()
            }),
        }
    }

    /// Counts the references of a schema that [`schema`](Self::schema) will bundle later,
    /// so that what is used once is known before anything is written.
    pub(crate) fn survey(&self, schema: &'d Value) -> Result<(), Problem> {
        let mut state = self.state.borrow_mut();
        let mut found = Vec::new();
        self.references(&state.shares, schema, 0, &mut found)
            .map_err(|e| e.at_root())?;
        self.intern_all(&mut state, found, None)
    }

    /// The value a local reference (`#/components/...`) points at.
    fn lookup(&self, reference: &str) -> Result<&'d Value, Problem> {
        reference
            .strip_prefix('#')
            .and_then(|pointer| pointer_lookup(self.document, pointer))
            .ok_or_else(|| Problem::Unresolved(reference.to_owned()))
    }

    /// Follows a chain of references to a parameter, request body or response object.
    pub(crate) fn follow(&self, mut value: &'d Value) -> Result<&'d Value, Problem> {
        for _ in 0..MAX_INLINE_DEPTH {
            match reference_of(value) {
                Some(reference) => value = self.lookup(reference)?,
                None => return Ok(value),
            }
        }
        Err(Problem::Unresolved(
            reference_of(value).unwrap_or_default().to_owned(),
        ))
    }

    /// `schema` with its references rewritten: each a `{"$ref": "#/$defs/Name"}` into the
    /// document's definitions, or inlined where that is smaller or clearer. A schema that is
    /// a reference itself is the body it names, unless the definition is recursive and
    /// `root` is [`Root::Reference`]: then its body would be written twice, at the root and
    /// under `$defs`. [`defs_of`](Self::defs_of) gives the `$defs` it needs.
    pub(crate) fn schema(
        &self,
        schema: &'d Value,
        root: Root,
        direction: Direction,
    ) -> Result<Value, Problem> {
        let pass = Pass {
            direction,
            nullable: self.openapi_30,
        };
        let mut state = self.state.borrow_mut();
        let mut found = Vec::new();
        self.references(&state.shares, schema, 0, &mut found)
            .map_err(|e| e.at_root())?;
        // Anything not surveyed before is taken in now, counted as it is found.
        let unknown: Vec<Link<'d>> = found
            .iter()
            .copied()
            .filter(|link| state.id(*link).is_none())
            .collect();
        self.intern_all(&mut state, unknown, None)?;
        self.finish(&mut state, pass)?;
        let broken = found.iter().find_map(|&link| {
            let id = state.id(link)?;
            done(&state, id, pass).broken
        });
        if let Some(cycle) = broken {
            let reference = state.targets[cycle as usize].reference;
            return Err(Problem::EmptyCycle(reference.to_owned()));
        }
        let mut deps = Ids::default();
        let whole = reference_of(schema).filter(|reference| {
            let id = state.by_reference[reference];
            root == Root::Body || !done(&state, id, pass).recursive
        });
        let root = match whole {
            Some(reference) => {
                let id = state.by_reference[reference];
                let mut body = done(&state, id, pass).body.clone();
                if let (Value::Object(body), Value::Object(siblings)) = (&mut body, schema) {
                    for (key, value) in siblings.iter().filter(|(key, _)| *key != "$ref") {
                        if let Some(value) = rewrite(&mut state, value, key, 1, &mut deps, pass) {
                            body.insert(key.clone(), value);
                        }
                    }
                    adjust(&state, body, pass);
                }
                body
            }
            None => rewrite_value(&mut state, schema, 0, &mut deps, pass),
        };
        Ok(root)
    }
}
