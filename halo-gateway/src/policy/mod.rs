//! Policies: rules that match tools and set the HALO declarations the layer enforces on them.
//!
//! A rule matches by upstream, tool name, tags and methods; it sets a rate, rates with
//! dimensions, a timeout, a circuit, approval, idempotency, effects, a risk level and who may
//! see the tool. For each field, the most specific matching rule that sets it wins (the one
//! with the most criteria given: an upstream other than `*`, tool globs other than `*`,
//! tags, methods); among equally specific rules, the later. The gateway writes the result
//! into the tool's `x-halo-*` extensions and security, so the layer enforces it and the
//! model reads it in the schema; `halo gateway explain` shows which rule set each field.

mod effective;
mod risk;
mod rule;

pub(crate) use self::effective::{Effective, Idempotency};
#[cfg(test)]
pub(crate) use self::effective::{Origin, Setting};
pub(crate) use self::rule::{Candidate, Rules};
