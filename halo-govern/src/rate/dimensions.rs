//! `limits.rates`: a tool's rate limits with their dimensions (per caller, tenant, tool,
//! argument value, or a combination of caller, tenant and argument values), enforced together
//! with `limits.rate`, all or nothing: a call is let through only when every limit that
//! applies to it has room, and only then does it spend from each.
//!
//! In memory, one lock per tool guards the state of all its limits (the theoretical arrival
//! time of GCRA, per key), so the check of all and the spending of all are one step. Keys are
//! SHA-256 digests of what they count (a caller, a tenant, an argument's value, a combination
//! of those), cut to 128 bits, so a value of any length is kept in 16 bytes; how many are kept
//! is bounded ([`MAX_KEYS`]).

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use halo_protocol::{Dimension, InputField, Limit, Location, Rate};
use http::HeaderValue;
use indexmap::IndexMap;
use sha2::{Digest, Sha256};

/// The most keys the limits of one tool keep in memory. Past it, the keys whose budget is
/// full again are forgotten first, then the half nearest to a full budget (which then starts
/// full again): memory stays bounded whatever values calls carry.
pub(crate) const MAX_KEYS: usize = 100_000;

/// Checks between two sweeps of the keys whose budget is full again.
const SWEEP_EVERY: u64 = 4096;

/// The key of one limit for one call: the first 128 bits of a SHA-256 of the limit and of
/// what it counts.
pub type Key = [u8; 16];

/// Where a limit finds what it counts in a call.
#[derive(Debug, Clone)]
pub enum Source {
    /// The caller's key (principal, client address).
    Caller,
    /// The principal's tenant; the caller's key when there is none.
    Tenant,
    /// Nothing: one budget for the tool.
    Tool,
    /// The value of a top-level argument, where the tool's input says it is.
    Argument {
        /// The argument's name in the tool's input.
        name: String,
        /// Where a call carries it.
        location: Location,
    },
    /// The values of each of these sources together (`Dimension::Combined`): a call that
    /// lacks one of them is not counted.
    Combined(Vec<Self>),
}

impl Source {
    /// Where a limit per `dimension` finds what it counts, its arguments located through
    /// `input` (in the body when `input` does not say); `None` for a dimension this version
    /// does not know.
    fn of(dimension: &Dimension, input: &IndexMap<String, InputField>) -> Option<Self> {
        Some(match dimension {
            Dimension::Caller => Self::Caller,
            Dimension::Tenant => Self::Tenant,
            Dimension::Tool => Self::Tool,
            Dimension::Argument(name) => Self::Argument {
                name: name.clone(),
                location: input
                    .get(name)
                    .and_then(|field| field.location)
                    .unwrap_or(Location::Body),
            },
            Dimension::Combined(parts) => Self::Combined(
                parts
                    .iter()
                    .map(|part| Self::of(part, input))
                    .collect::<Option<_>>()?,
            ),
            _ => return None,
        })
    }

    /// Whether it counts a value of the call's body.
    fn reads_body(&self) -> bool {
        match self {
            Self::Argument { location, .. } => *location == Location::Body,
            Self::Combined(parts) => parts.iter().any(Self::reads_body),
            _ => false,
        }
    }
}

/// A part of a dimension as a limit's slug writes it: `argument:<name>` for an argument, with
/// `%`, `+` and `:` in the name escaped when it is a part of a combination.
fn slug_part(part: &Dimension, combined: bool) -> String {
    match part {
        Dimension::Argument(name) if combined => format!(
            "argument:{}",
            name.replace('%', "%25")
                .replace('+', "%2B")
                .replace(':', "%3A")
        ),
        Dimension::Argument(name) => format!("argument:{name}"),
        other => other.as_str().to_owned(),
    }
}

/// One limit of a tool, ready to enforce.
#[derive(Debug)]
pub struct Bounded {
    pub(crate) limit: Limit,
    pub(crate) source: Source,
    /// The name of its policy in the `RateLimit` headers: the tool's name for `limits.rate`,
    /// `<tool>/<caller|tenant|tool|argument name>` for the others, `<tool>/<part>+<part>` for
    /// a combination.
    pub(crate) name: String,
    /// What its keys are made from besides the value counted: its dimension and rate.
    slug: String,
    /// The time one call takes from the budget, and the most calls let through at once.
    pub(crate) interval: Duration,
    pub(crate) burst: u32,
    policy: HeaderValue,
}

impl Bounded {
    fn new(limit: Limit, source: Source, name: String) -> Self {
        let rate = limit.rate();
        let (count, window) = (rate.count(), rate.window());
        let slug = match limit.per() {
            Dimension::Combined(parts) => {
                let parts: Vec<String> = parts.iter().map(|part| slug_part(part, true)).collect();
                format!("combined:{}:{rate}", parts.join("+"))
            }
            other => format!("{}:{rate}", slug_part(other, false)),
        };
        let policy = super::policy_header(&name, count.get(), window);
        Self {
            limit,
            source,
            name,
            slug,
            interval: super::interval(window, count),
            burst: count.get(),
            policy,
        }
    }

    /// The limit, as a refusal names it.
    #[inline]
    #[must_use]
    pub fn limit(&self) -> &Limit {
        &self.limit
    }

    /// Where it finds what it counts.
    #[inline]
    #[must_use]
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The key of this limit for `material`, what it counts (a caller key, a tenant, an
    /// argument's value, or for a combination the length-prefixed values of its parts).
    pub fn key(&self, material: &[u8]) -> Key {
        let mut digest = Sha256::new();
        digest.update(self.slug.as_bytes());
        digest.update([0]);
        digest.update(material);
        let digest = digest.finalize();
        let mut key = [0; 16];
        key.copy_from_slice(&digest[..16]);
        key
    }

    /// `RateLimit-Policy`.
    pub fn policy(&self) -> HeaderValue {
        self.policy.clone()
    }

    /// `RateLimit`: what is left, and when the next call is allowed (whole seconds, up).
    pub fn state(&self, remaining: u32, reset: Duration) -> HeaderValue {
        super::state_header(&self.name, remaining, reset)
    }

    /// What its `per` is, for Redis keys (`caller`, `tenant`, `tool`, `argument`,
    /// `combined`).
    #[cfg(feature = "redis")]
    pub fn per(&self) -> &str {
        self.limit.per().as_str()
    }
}

/// What a check of all of a tool's limits decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Let through; with the limit (an index) that has the fewest calls left and how many,
    /// unless no limit applied to the call.
    Allowed(Option<(usize, u32)>),
    /// Refused by the limit (an index) that refuses the longest, until this much time has
    /// passed. Nothing was spent.
    Limited(usize, Duration),
}

/// The rate limits of one tool that declares `limits.rates`, its `limits.rate` among them.
pub struct ToolLimits {
    pub(crate) limits: Box<[Bounded]>,
    /// Whether a limit counts a value of the call's body (found once, at start-up).
    pub(crate) reads_body: bool,
    /// The tool's name, as keys and policies name it.
    #[cfg_attr(
        not(feature = "redis"),
        expect(dead_code, reason = "Redis keys name the tool")
    )]
    pub(crate) tool: String,
    /// Theoretical arrival times, in nanoseconds since `epoch`, by key.
    state: Mutex<Budgets>,
    epoch: Instant,
    max_keys: usize,
}

impl ToolLimits {
    /// Its limits, in the order verdicts index them.
    #[inline]
    #[must_use]
    pub fn limits(&self) -> &[Bounded] {
        &self.limits
    }

    /// Whether a limit counts a value of the call's body (found once, at start-up).
    #[inline]
    #[must_use]
    pub fn reads_body(&self) -> bool {
        self.reads_body
    }
}

impl std::fmt::Debug for ToolLimits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolLimits")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Default)]
struct Budgets {
    tats: HashMap<Key, u64>,
    checks: u64,
}

impl ToolLimits {
    /// The limits of the tool named `tool`: `rate` (per caller) and `rates`, where `input`
    /// says where their arguments are; `None` when `rates` is empty (`rate` alone is the
    /// plain per-caller limit) or names no dimension this version knows. Repeated limits
    /// count once.
    #[must_use]
    pub fn new(
        tool: &str,
        rate: Option<Rate>,
        rates: &[Limit],
        input: &IndexMap<String, InputField>,
    ) -> Option<Self> {
        Self::with_max_keys(tool, rate, rates, input, MAX_KEYS)
    }

    fn with_max_keys(
        tool: &str,
        rate: Option<Rate>,
        rates: &[Limit],
        input: &IndexMap<String, InputField>,
        max_keys: usize,
    ) -> Option<Self> {
        if rates.is_empty() {
            return None;
        }
        let tool = tool.replace(['"', '\\'], "_");
        let mut limits: Vec<Bounded> = Vec::new();
        let declared = rate.map(|rate| (Limit::per_caller(rate), true));
        let others = rates.iter().map(|limit| (limit.clone(), false));
        for (limit, plain) in declared.into_iter().chain(others) {
            if limits.iter().any(|known| known.limit == limit) {
                continue;
            }
            let source = Source::of(limit.per(), input)?;
            let mut name = if plain {
                tool.clone()
            } else {
                let parts: Vec<&str> = limit
                    .per()
                    .parts()
                    .iter()
                    .map(|part| part.argument().unwrap_or(part.as_str()))
                    .collect();
                format!("{tool}/{}", parts.join("+").replace(['"', '\\'], "_"))
            };
            if limits.iter().any(|known| known.name == name) {
                name = format!("{name}/{}", limits.len());
            }
            limits.push(Bounded::new(limit, source, name));
        }
        let reads_body = limits.iter().any(|limit| limit.source.reads_body());
        Some(Self {
            reads_body,
            limits: limits.into_boxed_slice(),
            tool,
            state: Mutex::new(Budgets::default()),
            epoch: Instant::now(),
            max_keys,
        })
    }

    /// One call, whose key for each limit is in `keys` (`None` where the limit does not
    /// apply): spends one call from every limit's budget if all have room, from none
    /// otherwise.
    pub fn check(&self, keys: &[Option<Key>]) -> Verdict {
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut budgets = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        budgets.checks += 1;
        if budgets.checks.is_multiple_of(SWEEP_EVERY) {
            budgets.tats.retain(|_, tat| *tat > now);
        }
        let mut spent: Vec<(Key, u64)> = Vec::with_capacity(keys.len());
        let mut refused: Option<(usize, u64)> = None;
        let mut tightest: Option<(usize, u32)> = None;
        for (index, (limit, key)) in self.limits.iter().zip(keys).enumerate() {
            let Some(key) = key else { continue };
            let interval = u64::try_from(limit.interval.as_nanos())
                .unwrap_or(u64::MAX)
                .max(1);
            let tolerance = interval.saturating_mul(u64::from(limit.burst - 1));
            let tat = budgets.tats.get(key).copied().unwrap_or(now).max(now);
            if tat - tolerance.min(tat) > now {
                let wait = tat - tolerance - now;
                if refused.is_none_or(|(_, longest)| wait > longest) {
                    refused = Some((index, wait));
                }
                continue;
            }
            let tat = tat.saturating_add(interval);
            // `tat - tolerance <= now + interval`: the calls left after this one.
            let left = (now + tolerance + interval).saturating_sub(tat) / interval;
            let left = u32::try_from(left).unwrap_or(u32::MAX);
            if tightest.is_none_or(|(_, least)| left < least) {
                tightest = Some((index, left));
            }
            spent.push((*key, tat));
        }
        if let Some((index, wait)) = refused {
            return Verdict::Limited(index, Duration::from_nanos(wait));
        }
        for (key, tat) in spent {
            if budgets.tats.len() >= self.max_keys && !budgets.tats.contains_key(&key) {
                budgets.make_room(now, self.max_keys);
            }
            budgets.tats.insert(key, tat);
        }
        Verdict::Allowed(tightest)
    }

    /// How many keys are kept (tests).
    #[cfg(test)]
    fn keys(&self) -> usize {
        self.state.lock().unwrap().tats.len()
    }
}

impl Budgets {
    /// Forgets the keys whose budget is full again; if that is not enough, the half nearest
    /// to a full budget.
    fn make_room(&mut self, now: u64, max_keys: usize) {
        self.tats.retain(|_, tat| *tat > now);
        if self.tats.len() < max_keys {
            return;
        }
        let mut tats: Vec<u64> = self.tats.values().copied().collect();
        let middle = tats.len() / 2;
        let (_, median, _) = tats.select_nth_unstable(middle);
        let median = *median;
        self.tats.retain(|_, tat| *tat > median);
    }
}

/// Percent-decodes a path or query value (`+` is a space in a query).
#[must_use]
pub fn decoded(raw: &str, query: bool) -> Cow<'_, [u8]> {
    if query && raw.contains('+') {
        let spaced = raw.replace('+', " ");
        let bytes: Vec<u8> = percent_encoding::percent_decode_str(&spaced).collect();
        return Cow::Owned(bytes);
    }
    percent_encoding::percent_decode_str(raw).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(rate: Option<&str>, rates: &[&str], max_keys: usize) -> ToolLimits {
        let rates: Vec<Limit> = rates.iter().map(|text| text.parse().unwrap()).collect();
        let mut input = IndexMap::new();
        input.insert(
            "sku".to_owned(),
            InputField::new(serde_json::json!({"type": "string"})).located(Location::Path),
        );
        let rate = rate.map(|text| text.parse().unwrap());
        ToolLimits::with_max_keys("order", rate, &rates, &input, max_keys).unwrap()
    }

    #[test]
    fn names_policies_and_drops_repeats() {
        let set = limits(
            Some("5/minute"),
            &[
                "5/minute per caller",
                "10/hour per tenant",
                "20/day per tenant",
                "3/minute per sku",
            ],
            MAX_KEYS,
        );
        let names: Vec<&str> = set.limits.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            ["order", "order/tenant", "order/tenant/2", "order/sku"]
        );
        assert_eq!(set.limits[3].policy(), "\"order/sku\";q=3;w=60");
        assert!(matches!(
            set.limits[3].source,
            Source::Argument {
                location: Location::Path,
                ..
            }
        ));
        assert!(!set.reads_body);
        let rates = ["1/s per tool".parse::<Limit>().unwrap()];
        assert!(ToolLimits::new("t", None, &[], &IndexMap::new()).is_none());
        assert!(ToolLimits::new("t", None, &rates, &IndexMap::new()).is_some());
    }

    #[test]
    fn a_refusal_by_one_limit_spends_none_of_the_others() {
        // 2 per caller, 1 per sku.
        let set = limits(Some("2/minute"), &["1/minute per sku"], MAX_KEYS);
        let (caller, sku) = (&set.limits[0], &set.limits[1]);
        let alice = caller.key(b"p:alice");
        let keys = |value: &[u8]| [Some(alice), Some(sku.key(value))];
        assert_eq!(set.check(&keys(b"A")), Verdict::Allowed(Some((1, 0))));
        // "A" is used up: refused by the sku, and alice's second call is not spent.
        let Verdict::Limited(1, wait) = set.check(&keys(b"A")) else {
            panic!("refused by the sku limit");
        };
        assert!(wait > Duration::from_secs(59) && wait <= Duration::from_secs(60));
        assert!(matches!(set.check(&keys(b"A")), Verdict::Limited(1, _)));
        assert_eq!(set.check(&keys(b"B")), Verdict::Allowed(Some((0, 0))));
        // Now alice is used up too: the caller limit refuses "C".
        assert!(matches!(set.check(&keys(b"C")), Verdict::Limited(0, _)));
        // A limit that does not apply is not counted.
        assert!(matches!(
            set.check(&[None, Some(sku.key(b"D"))]),
            Verdict::Allowed(Some((1, 0)))
        ));
        assert_eq!(set.check(&[None, None]), Verdict::Allowed(None));
    }

    #[test]
    fn keys_are_bounded_and_values_are_not_kept() {
        let set = limits(None, &["1/day per sku"], 64);
        let sku = &set.limits[0];
        let huge = vec![b'x'; 1 << 20];
        assert_eq!(sku.key(&huge).len(), 16);
        for n in 0..1000u32 {
            let key = sku.key(&n.to_be_bytes());
            assert!(matches!(set.check(&[Some(key)]), Verdict::Allowed(_)));
            assert!(set.keys() <= 64, "{}", set.keys());
        }
        // The last values are still counted.
        let last = sku.key(&999u32.to_be_bytes());
        assert!(matches!(set.check(&[Some(last)]), Verdict::Limited(0, _)));
    }

    #[test]
    fn a_combination_is_a_limit_of_its_own_with_its_own_keys() {
        let set = limits(
            None,
            &[
                "2/minute per tenant and sku",
                "2/minute per tenant",
                "2/minute per sku",
                "2/minute per sku and tenant",
                "1/50s per caller and sku and note",
            ],
            MAX_KEYS,
        );
        let names: Vec<&str> = set.limits.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "order/tenant+sku",
                "order/tenant",
                "order/sku",
                "order/sku+tenant",
                "order/caller+sku+note",
            ]
        );
        let Source::Combined(parts) = &set.limits[0].source else {
            panic!("a combined source: {:?}", set.limits[0].source);
        };
        assert!(matches!(
            parts.as_slice(),
            [
                Source::Tenant,
                Source::Argument {
                    location: Location::Path,
                    ..
                }
            ]
        ));
        assert_eq!(set.limits[0].slug, "combined:tenant+argument:sku:2/minute");
        assert_eq!(set.limits[4].policy(), "\"order/caller+sku+note\";q=1;w=50");
        // `note` is not in the input: it is looked for in the body.
        assert!(set.reads_body);
        assert!(!limits(None, &["1/minute per tenant and sku"], MAX_KEYS).reads_body);
        // The same material makes a different key under each limit.
        let keys: Vec<Key> = set.limits.iter().map(|l| l.key(b"same")).collect();
        for (at, key) in keys.iter().enumerate() {
            assert!(!keys[..at].contains(key), "{at}");
        }
        // Budgets are counted per key: the combination's are apart from the tenant's.
        let (both, tenant) = (&set.limits[0], &set.limits[1]);
        let call = |material: &[u8]| {
            let mut keys = [None; 5];
            keys[0] = Some(both.key(material));
            keys[1] = Some(tenant.key(b"t:acme"));
            set.check(&keys)
        };
        assert!(matches!(call(b"acme,A"), Verdict::Allowed(_)));
        assert!(matches!(call(b"acme,B"), Verdict::Allowed(_)));
        assert!(matches!(call(b"acme,C"), Verdict::Limited(1, _)));
    }

    #[test]
    fn names_in_combined_slugs_cannot_run_together() {
        let mut input = IndexMap::new();
        for name in ["a", "a+tenant", "b:c"] {
            input.insert(
                name.to_owned(),
                InputField::new(serde_json::json!({"type": "string"})),
            );
        }
        let limit = |parts: Vec<Dimension>| {
            Limit::new(
                "1/minute".parse().unwrap(),
                Dimension::combined(parts).unwrap(),
            )
        };
        let argument = |name: &str| Dimension::Argument(name.to_owned());
        let rates = [
            limit(vec![argument("a+tenant"), Dimension::Caller]),
            limit(vec![argument("a"), Dimension::Tenant, Dimension::Caller]),
            limit(vec![argument("b:c"), Dimension::Caller]),
        ];
        let set = ToolLimits::new("t", None, &rates, &input).unwrap();
        let slugs: Vec<&str> = set.limits.iter().map(|l| l.slug.as_str()).collect();
        assert_eq!(
            slugs,
            [
                "combined:argument:a%2Btenant+caller:1/minute",
                "combined:argument:a+tenant+caller:1/minute",
                "combined:argument:b%3Ac+caller:1/minute",
            ]
        );
        // A dimension this version does not know: not enforced at all.
        let unknown = [Limit::new(
            "1/minute".parse().unwrap(),
            Dimension::Unknown("region".into()),
        )];
        assert!(ToolLimits::new("t", None, &unknown, &input).is_none());
    }
}
