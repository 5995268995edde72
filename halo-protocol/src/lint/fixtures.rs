//! Tools for the rules' tests: a set that passes every rule, and ways to change it and see
//! what is found.

use std::time::{Duration, SystemTime};

use serde_json::json;

use super::{Finding, Linter, Rule};
use crate::{Call, Effects, Example, InputField, Location, ToolEntry, ToolSchema};

/// A write that passes every rule: a domain tag, `write`, `why`, described inputs, an
/// example, reversible with undo.
pub(super) fn good_write() -> (ToolEntry, ToolSchema) {
    let entry =
        ToolEntry::new("/pets", "POST", "create_pet", "Add a pet.").with_tags(["pets", "write"]);
    let mut schema = ToolSchema::new(Call::new("POST", "/pets"));
    schema.description = "Add a pet.".into();
    schema.why = Some("Use to add a pet that list_pets does not find".into());
    schema.tags.clone_from(&entry.tags);
    schema.input.insert(
        "name".into(),
        InputField::new(json!({"type": "string", "description": "The pet's name"}))
            .located(Location::Body)
            .required(true),
    );
    schema.examples = vec![Example::new(
        json!({"name": "Rex"}).as_object().unwrap().clone(),
        None,
    )];
    schema.effects = Some(Effects {
        reversible: Some(true),
        undo: Some("DELETE /pets/{id}".into()),
        approval: None,
    });
    (entry, schema)
}

/// A read that passes every rule.
pub(super) fn good_read() -> (ToolEntry, ToolSchema) {
    let entry =
        ToolEntry::new("/pets/{id}", "GET", "get_pet", "Get a pet.").with_tags(["pets", "read"]);
    let mut schema = ToolSchema::new(Call::new("GET", "/pets/{id}"));
    schema.why = Some("Use when you know the pet's id".into());
    schema.input.insert(
        "id".into(),
        InputField::new(json!({"type": "integer", "description": "The pet's id"}))
            .located(Location::Path)
            .required(true),
    );
    (entry, schema)
}

/// A delete that passes every rule (the target of `good_write`'s undo).
pub(super) fn good_delete() -> (ToolEntry, ToolSchema) {
    let (_, mut schema) = good_read();
    let entry = ToolEntry::new("/pets/{id}", "DELETE", "delete_pet", "Delete a pet.")
        .with_tags(["pets", "write"]);
    schema.call = Call::new("DELETE", "/pets/{id}");
    schema.why = Some("Use only when asked to remove a pet for good".into());
    schema.examples = vec![Example::new(
        json!({"id": 1}).as_object().unwrap().clone(),
        None,
    )];
    schema.effects = Some(Effects {
        reversible: Some(false),
        undo: None,
        approval: None,
    });
    (entry, schema)
}

pub(super) fn good() -> Vec<(ToolEntry, ToolSchema)> {
    vec![good_write(), good_read(), good_delete()]
}

pub(super) fn ids(findings: &[Finding]) -> Vec<Rule> {
    findings.iter().map(|finding| finding.rule).collect()
}

/// The findings on the tools, checked on day 20000 (2024-10-04).
fn found(tools: &[(ToolEntry, ToolSchema)]) -> Vec<Finding> {
    Linter::new()
        .at(SystemTime::UNIX_EPOCH + Duration::from_secs(20_000 * 86_400))
        .check(tools)
        .findings
}

/// The rules that fire on the tools, in order.
pub(super) fn rules(tools: &[(ToolEntry, ToolSchema)]) -> Vec<Rule> {
    ids(&found(tools))
}

/// Changes the first tool of the good set and returns the findings.
pub(super) fn with_first(change: impl FnOnce(&mut ToolEntry, &mut ToolSchema)) -> Vec<Finding> {
    let mut tools = good();
    let (entry, schema) = &mut tools[0];
    change(entry, schema);
    found(&tools)
}
