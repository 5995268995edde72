//! Which definitions a tool's schemas share, to be written once at the root of the tool's
//! schema rather than in each input entry and the output that reach them (§5.4).

use std::collections::{HashMap, HashSet};

use super::{Bundler, Direction, Id};

/// How a tool's definitions are written: once at its root, or in the schemas that reach
/// them.
#[derive(Debug, Default)]
pub(crate) struct ToolDefs {
    /// The definitions written once at the tool's root, in the order first reached.
    pub(crate) shared: Vec<Id>,
    /// Each input entry's own definitions (the rest of what it reaches), in order.
    pub(crate) inputs: Vec<Vec<Id>>,
    /// The output's own definitions.
    pub(crate) output: Vec<Id>,
}

impl Bundler<'_> {
    /// Splits what each input entry and the output reach ([`defs_of`](Self::defs_of), in
    /// that order) into the definitions the tool shares and each schema's own.
    ///
    /// Shared: a definition two or more entries reach; and one that the output reaches as
    /// well as an entry, when it and everything it reaches read the same as input and as
    /// output (a definition with `readOnly` or `writeOnly` properties reads two ways, and
    /// the output keeps its own reading). The shared ones refer only to shared ones, so
    /// they stand together at the root.
    pub(crate) fn tool_defs(&self, inputs: Vec<Vec<Id>>, output: Vec<Id>) -> ToolDefs {
        let state = self.state.borrow();
        let mut reached_by: HashMap<Id, u32> = HashMap::new();
        for &id in inputs.iter().flatten() {
            *reached_by.entry(id).or_default() += 1;
        }
        let body = |id: Id, direction: Direction| {
            state.targets[id as usize].done[direction as usize]
                .as_ref()
                .expect("bundled")
        };
        // The output's definitions that read as the inputs read them, kept only while all
        // they refer to does too.
        let mut alike: HashSet<Id> = output
            .iter()
            .copied()
            .filter(|id| {
                reached_by.contains_key(id)
                    && body(*id, Direction::Input).body == body(*id, Direction::Output).body
            })
            .collect();
        loop {
            let apart: Vec<Id> = alike
                .iter()
                .copied()
                .filter(|id| {
                    let deps = &body(*id, Direction::Output).deps;
                    deps.iter().any(|dep| !alike.contains(dep))
                })
                .collect();
            if apart.is_empty() {
                break;
            }
            apart.iter().for_each(|id| {
                alike.remove(id);
            });
        }
        let is_shared = |id: &Id| reached_by[id] > 1 || alike.contains(id);
        let mut shared = Vec::new();
        let mut seen = HashSet::new();
        for &id in inputs.iter().flatten() {
            if is_shared(&id) && seen.insert(id) {
                shared.push(id);
            }
        }
        let inputs = inputs
            .into_iter()
            .map(|defs| defs.into_iter().filter(|id| !is_shared(id)).collect())
            .collect();
        let output = output
            .into_iter()
            .filter(|id| !alike.contains(id))
            .collect();
        ToolDefs {
            shared,
            inputs,
            output,
        }
    }
}
