//! What a layer built again (`HaloBuilder::carry_over`) keeps of the layer it replaces: each
//! tool's rate budgets and circuit breaker, when the tool has the same name and declares the
//! same limits, input and resilience, so that a reload neither refills a spent budget nor
//! closes an open circuit.

use std::collections::HashMap;

use super::{Governance, Rules};
use crate::registry::{Registry, Tool};

/// The previous layer's tools, by name, with their rules.
pub(crate) struct Carried<'a> {
    registry: &'a Registry,
    governance: &'a Governance,
    by_name: HashMap<&'a str, usize>,
}

impl<'a> Carried<'a> {
    pub(crate) fn new(registry: &'a Registry, governance: &'a Governance) -> Self {
        let by_name = registry
            .tools()
            .enumerate()
            .map(|(index, tool)| (tool.name(), index))
            .collect();
        Self {
            registry,
            governance,
            by_name,
        }
    }

    /// The rules of the previous tool of `tool`'s name, when it declared the same limits,
    /// input and resilience (and got the same deadline, `timeout`).
    pub(crate) fn same(
        &self,
        tool: &Tool,
        timeout: Option<std::time::Duration>,
    ) -> Option<&'a Rules> {
        let &index = self.by_name.get(tool.name())?;
        let (old, new) = (self.registry.tool_at(index).schema(), tool.schema());
        let rules = self.governance.rules(index);
        (old.limits == new.limits
            && old.input == new.input
            && old.resilience == new.resilience
            && rules.timeout == timeout)
            .then_some(rules)
    }
}
