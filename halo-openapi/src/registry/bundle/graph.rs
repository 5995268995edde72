//! The reference graph: every target a schema reaches, interned once with its uses counted,
//! and bundled strongly connected component by component, which tells recursive definitions
//! from those that may be copied to their uses.

use serde_json::Value;

use super::rewrite::rewrite_value;
use super::{Bundler, Done, Id, Ids, Link, Pass, Problem, State, Target};

/// What interning did to a target interned before it began, to be undone on a problem.
#[derive(Debug, Clone, Copy)]
enum Undo {
    /// A use counted.
    Use(Id),
    /// An edge added (the last of its edges).
    Edge(Id),
}

/// A definition whose bundled body serialises to at most this many bytes (and holds no
/// reference) is copied to its uses: `{"$ref":"#/$defs/timestamp"}` is not shorter.
const TINY: usize = 48;

impl<'d> Bundler<'d> {
    /// Interns the references in `found` and, transitively, everything their bodies
    /// reference; `from` is the target whose body they were found in.
    ///
    /// On a problem, the state is as it was before: nothing is left half-interned (a target
    /// whose own references were never walked), so a build that goes on past an operation
    /// that failed ([`lenient`](crate::RegistryBuilder::lenient)) finds every target whole.
    pub(super) fn intern_all(
        &self,
        state: &mut State<'d>,
        found: Vec<Link<'d>>,
        from: Option<Id>,
    ) -> Result<(), Problem> {
        let known = state.targets.len();
        let unfinished = [state.unfinished[0].len(), state.unfinished[1].len()];
        let mut undo = Vec::new();
        let result = self.intern_each(state, found, from, &mut undo);
        if result.is_err() {
            // The uses counted of targets interned before and the edges added to them, last
            // first; then every target interned since.
            for step in undo.into_iter().rev() {
                match step {
                    Undo::Use(id) => {
                        let target = &mut state.targets[id as usize];
                        target.uses = target.uses.saturating_sub(1);
                    }
                    Undo::Edge(from) => {
                        state.targets[from as usize].edges.pop();
                    }
                }
            }
            state.targets.truncate(known);
            let kept = |id: &mut Id| (*id as usize) < known;
            state.by_reference.retain(|_, id| kept(id));
            state.by_share.retain(|_, id| kept(id));
            for (list, len) in state.unfinished.iter_mut().zip(unfinished) {
                list.truncate(len);
            }
        }
        result
    }

    /// [`intern_all`](Self::intern_all) under way, recording in `undo` what it did to the
    /// targets interned before.
    fn intern_each(
        &self,
        state: &mut State<'d>,
        found: Vec<Link<'d>>,
        from: Option<Id>,
        undo: &mut Vec<Undo>,
    ) -> Result<(), Problem> {
        let known = state.targets.len();
        let mut pending: Vec<(Option<Id>, Vec<Link<'d>>)> = vec![(from, found)];
        while let Some((from, found)) = pending.pop() {
            for link in found {
                let id = match state.id(link) {
                    Some(id) => id,
                    None => {
                        let (reference, body, shared) = match link {
                            Link::Reference(reference) => {
                                (reference, self.lookup(reference)?, false)
                            }
                            Link::Shared(share) => {
                                let share = state.shares.get(share);
                                (share.name, share.body, true)
                            }
                        };
                        let id = Id::try_from(state.targets.len()).map_err(|_| Problem::Limit {
                            at: pointer_of(state, link),
                            limit: "max_defs",
                            value: self.limits.max_defs,
                        })?;
                        state.targets.push(Target {
                            reference,
                            shared,
                            body,
                            uses: 0,
                            edges: Vec::new(),
                            done: [None, None],
                            name: None,
                            piece: [None, None],
                        });
                        match link {
                            Link::Reference(reference) => state.by_reference.insert(reference, id),
                            Link::Shared(share) => state.by_share.insert(share, id),
                        };
                        for unfinished in &mut state.unfinished {
                            unfinished.push(id);
                        }
                        let mut inner = Vec::new();
                        self.references(&state.shares, body, 0, &mut inner)
                            .map_err(|e| e.at(&pointer_of(state, link)))?;
                        pending.push((Some(id), inner));
                        id
                    }
                };
                let target = &mut state.targets[id as usize];
                target.uses = target.uses.saturating_add(1);
                if (id as usize) < known {
                    undo.push(Undo::Use(id));
                }
                if let Some(from) = from.filter(|from| (*from as usize) < known) {
                    undo.push(Undo::Edge(from));
                }
                if let Some(from) = from {
                    state.targets[from as usize].edges.push(id);
                }
            }
        }
        Ok(())
    }

    /// Bundles every target not bundled yet, strongly connected components first (Tarjan's
    /// algorithm, without recursion: reference chains can be as long as the document).
    pub(super) fn finish(&self, state: &mut State<'d>, pass: Pass) -> Result<(), Problem> {
        let at = pass.at();
        let starts = std::mem::take(&mut state.unfinished[at]);
        if starts.is_empty() {
            return Ok(());
        }
        let result = self.finish_from(state, &starts, pass);
        if result.is_err() {
            // What was not bundled is still to be: a later schema meets the problem again
            // where it reaches it, and nothing it reaches is left without a body.
            state.unfinished[at] = starts
                .into_iter()
                .filter(|&id| state.targets[id as usize].done[at].is_none())
                .collect();
        }
        result
    }

    /// [`finish`](Self::finish) from the targets `starts`.
    fn finish_from(&self, state: &mut State<'d>, starts: &[Id], pass: Pass) -> Result<(), Problem> {
        let at = pass.at();
        let count = state.targets.len();
        let mut index: Vec<Option<u32>> = vec![None; count];
        let mut low = vec![0u32; count];
        let mut on_stack = vec![false; count];
        let mut stack: Vec<Id> = Vec::new();
        let mut next = 0u32;
        for &start in starts {
            let start = start as usize;
            if state.targets[start].done[at].is_some() || index[start].is_some() {
                continue;
            }
            // (node, next edge to look at)
            let mut calls: Vec<(Id, usize)> = vec![(start as Id, 0)];
            index[start] = Some(next);
            low[start] = next;
            next += 1;
            stack.push(start as Id);
            on_stack[start] = true;
            while let Some(&mut (node, ref mut edge)) = calls.last_mut() {
                let n = node as usize;
                if let Some(&child) = state.targets[n].edges.get(*edge) {
                    *edge += 1;
                    let c = child as usize;
                    if state.targets[c].done[at].is_some() {
                        continue;
                    }
                    match index[c] {
                        None => {
                            index[c] = Some(next);
                            low[c] = next;
                            next += 1;
                            stack.push(child);
                            on_stack[c] = true;
                            calls.push((child, 0));
                        }
                        Some(seen) if on_stack[c] => low[n] = low[n].min(seen),
                        Some(_) => {}
                    }
                    continue;
                }
                calls.pop();
                if let Some(&(parent, _)) = calls.last() {
                    let p = parent as usize;
                    low[p] = low[p].min(low[n]);
                }
                if Some(low[n]) == index[n] {
                    let mut component = Vec::new();
                    loop {
                        let member = stack.pop().expect("on the stack");
                        on_stack[member as usize] = false;
                        component.push(member);
                        if member == node {
                            break;
                        }
                    }
                    self.bundle_component(state, &component, pass)?;
                }
            }
        }
        Ok(())
    }

    /// Bundles one strongly connected component, whose references out of it are bundled.
    fn bundle_component(
        &self,
        state: &mut State<'d>,
        component: &[Id],
        pass: Pass,
    ) -> Result<(), Problem> {
        let at = pass.at();
        let recursive = component.len() > 1 || {
            let only = component[0];
            state.targets[only as usize].edges.contains(&only)
        };
        let empty = recursive
            && component
                .iter()
                .all(|&id| is_bare_reference(state.targets[id as usize].body));
        if empty && !self.lenient {
            return Err(Problem::EmptyCycle(
                state.targets[component[0] as usize].reference.to_owned(),
            ));
        }
        // Lenient, a cycle of bare references is marked broken instead, with everything that
        // reaches it: a schema that does is refused where it is bundled, and only that one.
        let broken = if empty {
            Some(component[0])
        } else {
            component
                .iter()
                .flat_map(|&id| &state.targets[id as usize].edges)
                .filter(|edge| !component.contains(edge))
                .find_map(|&edge| state.targets[edge as usize].done[at].as_ref()?.broken)
        };
        // Members refer to each other through `$defs`; mark them before any body is written.
        for &id in component {
            state.targets[id as usize].done[at] = Some(Done {
                body: Value::Null,
                recursive,
                inline: false,
                depth: 0,
                deps: Vec::new(),
                broken,
            });
        }
        if broken.is_some() {
            return Ok(());
        }
        for &id in component {
            let source = state.targets[id as usize].body;
            let mut deps = Ids::default();
            let body = rewrite_value(state, source, 0, &mut deps, pass);
            let depth = depth_of(&body);
            let inline = !recursive
                && (state.targets[id as usize].uses <= 1
                    || (deps.list.is_empty() && is_tiny(&body)));
            let done = state.targets[id as usize].done[at]
                .as_mut()
                .expect("marked");
            *done = Done {
                body,
                recursive,
                inline,
                depth,
                deps: deps.list,
                broken: None,
            };
        }
        Ok(())
    }
}

/// Where a link's target is in the document, for errors.
fn pointer_of(state: &State<'_>, link: Link<'_>) -> String {
    match link {
        Link::Reference(reference) => reference.to_owned(),
        Link::Shared(share) => state.shares.get(share).pointer.clone(),
    }
}

/// How deeply a value nests (a scalar: 0).
fn depth_of(value: &Value) -> usize {
    match value {
        Value::Object(map) => 1 + map.values().map(depth_of).max().unwrap_or(0),
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

/// Whether a value serialises to at most [`TINY`] bytes.
fn is_tiny(value: &Value) -> bool {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            if self.0 > TINY {
                return Err(std::io::ErrorKind::FileTooLarge.into());
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(Counter(0), value).is_ok()
}

/// A schema that is only a reference (`{"$ref": …}`, perhaps with annotations).
fn is_bare_reference(value: &Value) -> bool {
    value.as_object().is_some_and(|map| {
        map.contains_key("$ref")
            && map.keys().all(|key| {
                matches!(
                    key.as_str(),
                    "$ref" | "description" | "title" | "summary" | "$comment"
                )
            })
    })
}
