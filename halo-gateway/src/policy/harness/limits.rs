//! A Harness rate limit as one of the layer's: its token bucket (`capacity` at once,
//! `refill_rate` a second) is the layer's GCRA limit of `capacity` calls per
//! `capacity / refill_rate` seconds, and its dimension or key template says whose budget a
//! call spends.
//!
//! The layer counts each tool's calls apart. A Harness key that does not name the tool
//! (`agent`, `tenant`, a `custom` template without `{tool_name}`) is one budget for every
//! tool the policy applies to; it maps exactly while the policy applies to one tool, and
//! the merge refuses it when it applies to more ([`Mapped::pooled`]).

use std::num::NonZeroU32;
use std::time::Duration;

use halo_protocol::{Dimension, Limit, Rate};

use crate::file::harness::RateLimit;

/// A Harness limit as the layer's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Mapped {
    pub(crate) limit: Limit,
    /// The Harness counts it across every tool the policy applies to.
    pub(crate) pooled: bool,
}

/// Maps `limit`; an error says why it cannot be.
pub(crate) fn map(limit: &RateLimit) -> Result<Mapped, String> {
    if limit.conditions.as_ref().is_some_and(|c| !c.is_empty()) {
        return Err(
            "`match` cannot be mapped: the gateway applies a policy's limits to every call \
             of its tools; write a policy for the tools instead"
                .into(),
        );
    }
    let rate = rate(limit)?;
    let (per, pooled) = match limit.dimension.as_str() {
        "tool" | "server_tool" => (Dimension::Tool, false),
        "agent_tool" => (Dimension::Caller, false),
        "tenant_tool" => (Dimension::Tenant, false),
        "agent" => (Dimension::Caller, true),
        "tenant" => (Dimension::Tenant, true),
        "custom" => {
            let template = limit.key_template.as_deref().ok_or(
                "a `custom` limit needs a `key_template`, as in \"tenant:{tenant_id}:order:{args.order_id}\"",
            )?;
            template_dimension(template)?
        }
        other => {
            return Err(format!(
                "dimension `{other}` is not one of tool, server_tool, agent_tool, tenant_tool, \
                 agent, tenant, custom"
            ));
        }
    };
    if limit.key_template.is_some() && limit.dimension != "custom" {
        return Err("`key_template` goes with `dimension: custom` only".into());
    }
    Ok(Mapped {
        limit: Limit::new(rate, per),
        pooled,
    })
}

/// The rate: `capacity` per `capacity / refill_rate` seconds, to the millisecond.
fn rate(limit: &RateLimit) -> Result<Rate, String> {
    let (capacity, refill) = match (limit.capacity, limit.refill_rate, limit.limit_per_minute) {
        (Some(capacity), Some(refill), None) => (capacity, refill),
        (None, None, Some(per_minute)) => (per_minute, per_minute / 60.0),
        _ => {
            return Err("give `capacity` and `refill_rate` (or `limit_per_minute` alone)".into());
        }
    };
    let count = Some(capacity)
        .filter(|c| c.is_finite() && *c >= 1.0 && c.fract() == 0.0 && *c <= f64::from(u32::MAX))
        .and_then(|c| NonZeroU32::new(c as u32))
        .ok_or("`capacity` must be a whole number of calls, 1 or more")?;
    if !(refill.is_finite() && refill > 0.0) {
        return Err("`refill_rate` must be a number of calls a second above zero".into());
    }
    let millis = (capacity / refill * 1000.0).round();
    if !(1.0..=f64::from(u32::MAX) * 1000.0).contains(&millis) {
        return Err(format!(
            "{capacity} calls refilled at {refill} a second make a window the gateway cannot \
             keep (between 1 ms and 136 years)"
        ));
    }
    Rate::over(count, Duration::from_millis(millis as u64))
        .ok_or_else(|| format!("{capacity} calls per {millis} ms is not a rate the layer keeps"))
}

/// The dimension a `custom` key template makes: the parts it names, and whether it names
/// the tool (else its budget spans every tool of the policy).
fn template_dimension(template: &str) -> Result<(Dimension, bool), String> {
    let mut parts: Vec<Dimension> = Vec::new();
    let mut names_tool = false;
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("`{template}` opens a `{{` it does not close"))?;
        let field = &after[..close];
        rest = &after[close + 1..];
        let part = match field {
            "tenant_id" => Dimension::Tenant,
            "agent_id" => Dimension::Caller,
            "tool_name" | "server_id" => {
                names_tool = true;
                continue;
            }
            _ => match field
                .strip_prefix("args.")
                .or_else(|| field.strip_prefix("arguments."))
            {
                Some(argument) if is_identifier(argument) => {
                    Dimension::Argument(argument.to_owned())
                }
                Some(argument) => {
                    return Err(format!(
                        "`{{{field}}}`: the gateway keys limits by top-level arguments, and \
                         `{argument}` is not one"
                    ));
                }
                None => {
                    return Err(format!(
                        "`{{{field}}}` cannot be mapped: a key may use {{tenant_id}}, \
                         {{agent_id}}, {{tool_name}}, {{server_id}} and {{args.<argument>}}, \
                         all of them from the caller's verified identity or the call"
                    ));
                }
            },
        };
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    let dimension = match parts.len() {
        0 => Dimension::Tool,
        1 => parts.remove(0),
        _ => Dimension::combined(parts).ok_or("the key's parts cannot be combined")?,
    };
    Ok((dimension, !names_tool))
}

fn is_identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(yaml: &str) -> Result<Mapped, String> {
        let value = crate::read::parse(&format!("limit: {yaml}")).unwrap();
        map(&serde_json::from_value(value["limit"].clone()).unwrap())
    }

    #[test]
    fn buckets_become_rates_with_their_dimension() {
        // Each bucket, the rate it becomes, and whether its budget spans the policy's tools
        // (a key that does not name the tool).
        for (yaml, rate, pooled) in [
            (
                "{dimension: tenant_tool, capacity: 1000, refill_rate: 20}",
                "1000/50 seconds per tenant",
                false,
            ),
            (
                "{dimension: custom, key_template: 'tenant:{tenant_id}:campaign:{args.campaign_id}', \
                 capacity: 100, refill_rate: 2}",
                "100/50 seconds per tenant and campaign_id",
                true,
            ),
            (
                "{dimension: custom, key_template: 'tenant:{tenant_id}:order:{args.order_id}', \
                 capacity: 1, refill_rate: 0.01}",
                "1/100 seconds per tenant and order_id",
                true,
            ),
            (
                "{dimension: custom, key_template: '{tool_name}:{args.sku}', capacity: 5, refill_rate: 5}",
                "5/second per sku",
                false,
            ),
            (
                "{dimension: agent, limit_per_minute: 30}",
                "30/minute per caller",
                true,
            ),
            (
                "{dimension: server_tool, capacity: 3, refill_rate: 4}",
                "3/750 milliseconds per tool",
                false,
            ),
        ] {
            let mapped = limit(yaml).unwrap();
            assert_eq!(mapped.limit.to_string(), rate, "{yaml}");
            assert_eq!(mapped.pooled, pooled, "{yaml}");
        }
    }

    #[test]
    fn what_cannot_be_mapped_says_why() {
        for (yaml, says) in [
            (
                "{dimension: region, capacity: 1, refill_rate: 1}",
                "not one of",
            ),
            (
                "{dimension: custom, capacity: 1, refill_rate: 1}",
                "needs a `key_template`",
            ),
            (
                "{dimension: custom, key_template: '{metadata.team}', capacity: 1, refill_rate: 1}",
                "cannot be mapped",
            ),
            (
                "{dimension: custom, key_template: '{args.order.id}', capacity: 1, refill_rate: 1}",
                "top-level arguments",
            ),
            (
                "{dimension: custom, key_template: '{args', capacity: 1, refill_rate: 1}",
                "close",
            ),
            (
                "{dimension: tool, capacity: 1.5, refill_rate: 1}",
                "whole number",
            ),
            (
                "{dimension: tool, capacity: 0, refill_rate: 1}",
                "whole number",
            ),
            (
                "{dimension: tool, capacity: 1, refill_rate: 0}",
                "above zero",
            ),
            ("{dimension: tool, capacity: 1}", "give `capacity`"),
            (
                "{dimension: tool, capacity: 1, refill_rate: 1, match: {tenant: a}}",
                "`match`",
            ),
            (
                "{dimension: tool, key_template: '{tenant_id}', capacity: 1, refill_rate: 1}",
                "custom` only",
            ),
        ] {
            let error = limit(yaml).unwrap_err();
            assert!(error.contains(says), "{yaml}: {error}");
        }
    }
}
