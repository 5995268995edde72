//! Rules read from the configuration: what each matches and sets, checked once.

use std::time::Duration;

use glob::Pattern;
use halo_protocol::{Circuit, Limit, Rate, parse_duration};
use http::Method;

use super::effective::{Effective, Idempotency, Origin, Setting};
use super::risk::Risk;
use crate::file;

/// A tool as the rules see it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Candidate<'a> {
    pub(crate) upstream: &'a str,
    /// Its `operationId` as its upstream writes it (an MCP tool's name), if it has one.
    pub(crate) id: Option<&'a str>,
    /// The name its upstream gives it.
    pub(crate) given: &'a str,
    /// The name the gateway serves it under.
    pub(crate) served: &'a str,
    pub(crate) tags: &'a [String],
    pub(crate) method: &'a Method,
}

/// The checked rules, in the configuration's order.
#[derive(Debug, Default)]
pub(crate) struct Rules {
    rules: Vec<Rule>,
}

#[derive(Debug)]
struct Rule {
    upstream: Option<Pattern>,
    tools: Vec<Pattern>,
    tags: Vec<String>,
    methods: Vec<Method>,
    set: Set,
    /// How many criteria it gives: more is more specific.
    specificity: usize,
}

#[derive(Debug, Default)]
struct Set {
    risk: Option<Risk>,
    exclude: Option<bool>,
    rate: Option<Rate>,
    rates: Option<Vec<Limit>>,
    timeout: Option<Duration>,
    circuit: Option<Circuit>,
    approval: Option<bool>,
    idempotency: Option<Idempotency>,
    reversible: Option<bool>,
    scopes: Option<Vec<String>>,
}

impl Rules {
    /// Checks every rule; an error names the rule's key (`policies[1].set.rate`).
    pub(crate) fn compile(rules: &[file::Rule]) -> Result<Self, String> {
        let rules = rules
            .iter()
            .enumerate()
            .map(|(index, rule)| {
                Rule::compile(rule).map_err(|(key, why)| format!("policies[{index}].{key}: {why}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { rules })
    }

    /// Whether some rule asks for approval (itself or through its risk level).
    pub(crate) fn any_approval(&self) -> bool {
        self.rules.iter().any(|rule| {
            rule.set.approval == Some(true)
                || (rule.set.approval.is_none() && rule.set.risk.is_some_and(Risk::approval))
        })
    }

    /// Whether some rule limits who sees its tools.
    pub(crate) fn any_scopes(&self) -> bool {
        self.rules
            .iter()
            .any(|rule| rule.set.scopes.as_ref().is_some_and(|s| !s.is_empty()))
    }

    /// A rule's criteria in a line, for `explain`.
    pub(crate) fn describe(&self, index: usize) -> String {
        let Some(rule) = self.rules.get(index) else {
            return format!("policies[{index}]");
        };
        let mut criteria = Vec::new();
        if let Some(upstream) = &rule.upstream {
            criteria.push(format!("upstream={upstream}"));
        }
        if !rule.tools.is_empty() {
            let tools: Vec<&str> = rule.tools.iter().map(Pattern::as_str).collect();
            criteria.push(format!("tools={}", tools.join(",")));
        }
        if !rule.tags.is_empty() {
            criteria.push(format!("tags={}", rule.tags.join(",")));
        }
        if !rule.methods.is_empty() {
            let methods: Vec<&str> = rule.methods.iter().map(Method::as_str).collect();
            criteria.push(format!("methods={}", methods.join(",")));
        }
        match criteria.is_empty() {
            true => format!("policies[{index}] (every tool)"),
            false => format!("policies[{index}] ({})", criteria.join(" ")),
        }
    }

    /// What the rules set on `tool`.
    pub(crate) fn effective(&self, tool: Candidate<'_>) -> Effective {
        let mut matching: Vec<(usize, &Rule)> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, rule)| rule.matches(tool))
            .collect();
        // Least specific first, so that the more specific (and, among equals, the later)
        // overwrite it.
        matching.sort_by_key(|(index, rule)| (rule.specificity, *index));
        let mut effective = Effective::default();
        for (index, rule) in matching {
            rule.set.apply(index, &mut effective);
        }
        effective
    }
}

impl Rule {
    fn compile(rule: &file::Rule) -> Result<Self, (&'static str, String)> {
        let criteria = &rule.matches;
        let glob = |key: &'static str, text: &str| {
            Pattern::new(text).map_err(|e| (key, format!("`{text}` is not a glob: {e}")))
        };
        let upstream = criteria
            .upstream
            .as_deref()
            .map(|text| glob("match.upstream", text))
            .transpose()?;
        let tools = criteria
            .tools
            .as_ref()
            .map_or(&[][..], |tools| tools.as_slice())
            .iter()
            .map(|text| glob("match.tools", text))
            .collect::<Result<Vec<_>, _>>()?;
        let methods = criteria
            .methods
            .iter()
            .map(|text| {
                let upper = text.to_ascii_uppercase();
                match upper.as_str() {
                    "GET" | "PUT" | "POST" | "DELETE" | "OPTIONS" | "HEAD" | "PATCH" | "TRACE" => {
                        Ok(Method::from_bytes(upper.as_bytes()).expect("a standard method"))
                    }
                    _ => Err(("match.methods", format!("`{text}` is not an HTTP method"))),
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        let every = |p: &Pattern| p.as_str() == "*";
        let specificity = usize::from(upstream.as_ref().is_some_and(|p| !every(p)))
            + usize::from(!tools.is_empty() && !tools.iter().all(every))
            + usize::from(!criteria.tags.is_empty())
            + usize::from(!methods.is_empty());
        Ok(Self {
            upstream,
            tools,
            tags: criteria.tags.clone(),
            methods,
            set: Set::compile(&rule.set)?,
            specificity,
        })
    }

    fn matches(&self, tool: Candidate<'_>) -> bool {
        self.upstream
            .as_ref()
            .is_none_or(|glob| glob.matches(tool.upstream))
            && (self.tools.is_empty()
                || self
                    .tools
                    .iter()
                    .any(|glob| glob.matches(tool.given) || glob.matches(tool.served)))
            && (self.tags.is_empty() || self.tags.iter().any(|tag| tool.tags.contains(tag)))
            && (self.methods.is_empty() || self.methods.contains(tool.method))
    }
}

impl Set {
    fn compile(set: &file::Set) -> Result<Self, (&'static str, String)> {
        let risk = set
            .risk
            .as_deref()
            .map(|text| {
                Risk::parse(text).ok_or(("set.risk", format!("`{text}` is not L0, L1, L2 or L3")))
            })
            .transpose()?;
        let rate = set
            .rate
            .as_deref()
            .map(|text| {
                text.parse::<Rate>()
                    .map_err(|e| ("set.rate", e.to_string()))
            })
            .transpose()?;
        let rates = set
            .rates
            .as_ref()
            .map(|rates| {
                rates
                    .iter()
                    .map(|text| {
                        text.parse::<Limit>()
                            .map_err(|e| ("set.rates", e.to_string()))
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let timeout = set
            .timeout
            .as_deref()
            .map(|text| match parse_duration(text) {
                Some(timeout) if !timeout.is_zero() => Ok(timeout),
                _ => Err((
                    "set.timeout",
                    format!("`{text}` is not a duration above zero such as 5s or 250ms"),
                )),
            })
            .transpose()?;
        let circuit = set
            .circuit
            .as_deref()
            .map(|text| {
                text.parse::<Circuit>()
                    .map_err(|e| ("set.circuit", e.to_string()))
            })
            .transpose()?;
        let approval = set
            .approval
            .as_deref()
            .map(|text| match text {
                "required" => Ok(true),
                "none" => Ok(false),
                _ => Err((
                    "set.approval",
                    format!("`{text}` is not `required` or `none`"),
                )),
            })
            .transpose()?;
        let idempotency = set
            .idempotency
            .as_deref()
            .map(|text| {
                Idempotency::parse(text).ok_or((
                    "set.idempotency",
                    format!("`{text}` is not `required`, `optional` or `off`"),
                ))
            })
            .transpose()?;
        Ok(Self {
            risk,
            exclude: set.exclude,
            rate,
            rates,
            timeout,
            circuit,
            approval,
            idempotency,
            reversible: set.effects.as_ref().and_then(|e| e.reversible),
            scopes: set.visible_to.as_ref().map(|v| v.scopes.clone()),
        })
    }

    /// Writes what this rule (at `index`) sets over `effective`: its risk level first, then
    /// the fields it sets itself.
    fn apply(&self, index: usize, effective: &mut Effective) {
        let by = |risk: Option<Risk>| Origin { rule: index, risk };
        if let Some(risk) = self.risk {
            let via = by(Some(risk));
            effective.approval = Some(Setting {
                value: risk.approval(),
                origin: via,
            });
            if let Some(reversible) = risk.reversible() {
                effective.reversible = Some(Setting {
                    value: reversible,
                    origin: via,
                });
            }
            if risk.key_required() {
                effective.idempotency = Some(Setting {
                    value: Idempotency::Required,
                    origin: via,
                });
            }
        }
        fn put<T: Clone>(field: &mut Option<Setting<T>>, value: &Option<T>, origin: Origin) {
            if let Some(value) = value {
                *field = Some(Setting {
                    value: value.clone(),
                    origin,
                });
            }
        }
        let own = by(None);
        put(&mut effective.exclude, &self.exclude, own);
        put(&mut effective.rate, &self.rate, own);
        put(&mut effective.rates, &self.rates, own);
        put(&mut effective.timeout, &self.timeout, own);
        put(&mut effective.circuit, &self.circuit, own);
        put(&mut effective.approval, &self.approval, own);
        put(&mut effective.idempotency, &self.idempotency, own);
        put(&mut effective.reversible, &self.reversible, own);
        put(&mut effective.scopes, &self.scopes, own);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(yaml: &str) -> Rules {
        let value = crate::read::parse(yaml).unwrap();
        let rules: Vec<file::Rule> = serde_json::from_value(value).unwrap();
        Rules::compile(&rules).unwrap()
    }

    fn tool<'a>(upstream: &'a str, name: &'a str, method: &'a Method) -> Candidate<'a> {
        Candidate {
            upstream,
            id: None,
            given: name,
            served: name,
            tags: &[],
            method,
        }
    }

    #[test]
    fn the_most_specific_rule_wins_field_by_field() {
        let rules = rules(
            r#"
- match: { upstream: github, tools: "issues*", methods: [POST, PATCH] }
  set: { rate: 10/minute, approval: required }
- match: { upstream: "*" }
  set: { timeout: 5s, rate: 100/minute, approval: none }
- match: { upstream: github }
  set: { timeout: 2s }
"#,
        );
        let post = Method::POST;
        let effective = rules.effective(tool("github", "issues_create", &post));
        assert_eq!(
            effective.rate.as_ref().unwrap().value.to_string(),
            "10/minute"
        );
        assert_eq!(effective.rate.unwrap().origin.rule, 0);
        assert!(effective.approval.unwrap().value);
        assert_eq!(
            effective.timeout.as_ref().unwrap().value,
            Duration::from_secs(2)
        );
        assert_eq!(effective.timeout.unwrap().origin.rule, 2);

        let get = Method::GET;
        let effective = rules.effective(tool("github", "issues_get", &get));
        assert_eq!(effective.rate.unwrap().value.to_string(), "100/minute");
        assert!(!effective.approval.unwrap().value);
        let effective = rules.effective(tool("stripe", "issues_create", &post));
        assert_eq!(effective.timeout.unwrap().value, Duration::from_secs(5));
    }

    #[test]
    fn risk_levels_stand_for_fields_the_rule_may_override() {
        let rules = rules(
            r#"
- set: { risk: L3, approval: none }
- match: { tools: [refund*] }
  set: { risk: L1 }
"#,
        );
        let post = Method::POST;
        let effective = rules.effective(tool("pay", "charge", &post));
        assert!(!effective.approval.as_ref().unwrap().value);
        assert_eq!(effective.approval.unwrap().origin.risk, None);
        assert_eq!(
            effective.idempotency.as_ref().unwrap().value,
            Idempotency::Required
        );
        assert_eq!(effective.idempotency.unwrap().origin.risk, Some(Risk::L3));
        let effective = rules.effective(tool("pay", "refund", &post));
        assert!(effective.reversible.unwrap().value);
        // The risk of the more specific rule sets approval; L3's key stays.
        assert!(!effective.approval.unwrap().value);
        assert!(effective.idempotency.is_some());
    }

    #[test]
    fn bad_values_name_their_key() {
        let cases = [
            ("- set: { rate: ten }", "policies[0].set.rate"),
            ("- set: { rates: [5/minute] }", "policies[0].set.rates"),
            ("- set: { timeout: '5' }", "policies[0].set.timeout"),
            ("- set: { timeout: 0s }", "policies[0].set.timeout"),
            ("- set: { circuit: 0/1s/1 }", "policies[0].set.circuit"),
            ("- set: { approval: maybe }", "policies[0].set.approval"),
            ("- set: { idempotency: yes }", "policies[0].set.idempotency"),
            ("- set: { risk: L9 }", "policies[0].set.risk"),
            (
                "- { match: { methods: [FETCH] }, set: {} }",
                "policies[0].match.methods",
            ),
            (
                "- { match: { tools: '[' }, set: {} }",
                "policies[0].match.tools",
            ),
        ];
        for (yaml, key) in cases {
            let value = crate::read::parse(yaml).unwrap();
            let parsed: Vec<file::Rule> = serde_json::from_value(value).unwrap();
            let error = Rules::compile(&parsed).unwrap_err();
            assert!(error.starts_with(key), "{yaml}: {error}");
        }
    }
}
