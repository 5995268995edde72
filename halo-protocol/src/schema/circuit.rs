//! `resilience.circuit`: when the server stops running an operation that keeps failing, and
//! how it tries again.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A circuit breaker an operation declares (`resilience.circuit`).
///
/// After [`failures`](Self::failures) consecutive failed calls (a `5xx` answer, the server's
/// own `504` included) the circuit opens: calls are refused with `503` and `Retry-After`,
/// without running the operation, for [`cool_down`](Self::cool_down). Then one call at a time
/// is let through as a probe (half-open): [`successes`](Self::successes) consecutive
/// successful probes close the circuit, a failed one opens it again.
///
/// Written `{"failures": 5, "cool_down_ms": 30000, "successes": 2}`; a field left out takes
/// its default (5, 30 s, 2). As text (`#[halo(circuit = "...")]`) it is
/// `failures/cool-down/successes`, the cool-down in `ms`, `s`, `m` or `h`: `"5/30s/2"`.
///
/// ```
/// use std::time::Duration;
/// use halo_protocol::Circuit;
///
/// let circuit: Circuit = "3/10s/1".parse().unwrap();
/// assert_eq!(circuit.failures().get(), 3);
/// assert_eq!(circuit.cool_down(), Duration::from_secs(10));
/// assert_eq!(
///     serde_json::to_string(&circuit).unwrap(),
///     r#"{"failures":3,"cool_down_ms":10000,"successes":1}"#
/// );
/// assert_eq!(Circuit::default().to_string(), "5/30s/2");
/// assert!("0/10s/1".parse::<Circuit>().is_err());
/// assert!(serde_json::from_str::<Circuit>(r#"{"cool_down_ms": 0}"#).is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Circuit {
    failures: NonZeroU32,
    cool_down: Duration,
    successes: NonZeroU32,
}

impl Default for Circuit {
    /// 5 failures, 30 s, 2 successes.
    fn default() -> Self {
        Self {
            failures: NonZeroU32::new(5).expect("5 is not zero"),
            cool_down: Duration::from_secs(30),
            successes: NonZeroU32::new(2).expect("2 is not zero"),
        }
    }
}

impl Circuit {
    /// A circuit that opens after `failures` consecutive failures, stays open for
    /// `cool_down`, and closes after `successes` consecutive successful probes.
    ///
    /// # Errors
    /// A cool-down of zero, or one over `u64::MAX` milliseconds.
    pub fn new(
        failures: NonZeroU32,
        cool_down: Duration,
        successes: NonZeroU32,
    ) -> Result<Self, CircuitError> {
        if cool_down.is_zero() {
            return Err(CircuitError::new("the cool-down must be longer than zero"));
        }
        if u64::try_from(cool_down.as_millis()).is_err() {
            return Err(CircuitError::new("the cool-down is too long"));
        }
        Ok(Self {
            failures,
            cool_down,
            successes,
        })
    }

    /// Consecutive failures that open the circuit.
    #[must_use]
    pub const fn failures(&self) -> NonZeroU32 {
        self.failures
    }

    /// How long the circuit stays open before a probe is let through.
    #[must_use]
    pub const fn cool_down(&self) -> Duration {
        self.cool_down
    }

    /// Consecutive successful probes that close the circuit.
    #[must_use]
    pub const fn successes(&self) -> NonZeroU32 {
        self.successes
    }

    /// The cool-down in whole milliseconds (sub-millisecond parts are dropped).
    fn cool_down_ms(&self) -> u64 {
        u64::try_from(self.cool_down.as_millis()).unwrap_or(u64::MAX)
    }
}

/// Why a circuit could not be made or read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid circuit: {reason}")]
pub struct CircuitError {
    reason: &'static str,
}

impl CircuitError {
    const fn new(reason: &'static str) -> Self {
        Self { reason }
    }

    /// What is wrong.
    #[must_use]
    pub fn reason(&self) -> &'static str {
        self.reason
    }
}

impl FromStr for Circuit {
    type Err = CircuitError;

    /// `failures/cool-down/successes`, e.g. `5/30s/2` or `3/500ms/1`.
    fn from_str(input: &str) -> Result<Self, Self::Err> {
        const SHAPE: &str = "a circuit looks like failures/cool-down/successes, as in 5/30s/2";
        let mut parts = input.split('/').map(str::trim);
        let (Some(failures), Some(cool_down), Some(successes), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err(CircuitError::new(SHAPE));
        };
        let count = |digits: &str| {
            Some(digits)
                .filter(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|d| d.parse::<NonZeroU32>().ok())
                .ok_or(CircuitError::new(
                    "failures and successes must be whole numbers above zero, as in 5/30s/2",
                ))
        };
        Self::new(count(failures)?, duration(cool_down)?, count(successes)?)
    }
}

/// `500ms`, `30s`, `2m`, `1h`.
fn duration(text: &str) -> Result<Duration, CircuitError> {
    crate::parse_duration(text).ok_or(CircuitError::new(
        "the cool-down is a whole number of ms, s, m or h, as in 30s",
    ))
}

impl fmt::Display for Circuit {
    /// The shortest exact form: `5/30s/2`, `3/1500ms/1`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.cool_down_ms();
        let (value, unit) = match ms {
            _ if ms.is_multiple_of(3_600_000) => (ms / 3_600_000, "h"),
            _ if ms.is_multiple_of(60_000) => (ms / 60_000, "m"),
            _ if ms.is_multiple_of(1_000) => (ms / 1_000, "s"),
            _ => (ms, "ms"),
        };
        write!(f, "{}/{value}{unit}/{}", self.failures, self.successes)
    }
}

/// The JSON form: every field optional when read.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Written {
    #[serde(default)]
    failures: Option<u32>,
    #[serde(default)]
    cool_down_ms: Option<u64>,
    #[serde(default)]
    successes: Option<u32>,
}

impl Serialize for Circuit {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Written {
            failures: Some(self.failures.get()),
            cool_down_ms: Some(self.cool_down_ms()),
            successes: Some(self.successes.get()),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Circuit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let written = Written::deserialize(deserializer)?;
        let default = Self::default();
        let count = |value: Option<u32>, default: NonZeroU32, name: &str| match value {
            None => Ok(default),
            Some(value) => NonZeroU32::new(value)
                .ok_or_else(|| D::Error::custom(format!("circuit: {name} must be at least 1"))),
        };
        let failures = count(written.failures, default.failures, "failures")?;
        let successes = count(written.successes, default.successes, "successes")?;
        let cool_down = written
            .cool_down_ms
            .map_or(default.cool_down, Duration::from_millis);
        Self::new(failures, cool_down, successes).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_and_writes_the_text_form() {
        for (input, canonical) in [
            ("5/30s/2", "5/30s/2"),
            (" 3 / 500ms / 1 ", "3/500ms/1"),
            ("1/1500ms/1", "1/1500ms/1"),
            ("2/120s/3", "2/2m/3"),
            ("2/1h/3", "2/1h/3"),
        ] {
            assert_eq!(input.parse::<Circuit>().unwrap().to_string(), canonical);
        }
        for input in [
            "",
            "5",
            "5/30s",
            "5/30s/2/1",
            "0/30s/2",
            "5/30s/0",
            "5/0s/2",
            "5/30/2",
            "5/30d/2",
            "x/30s/2",
            "5/-1s/2",
        ] {
            assert!(input.parse::<Circuit>().is_err(), "{input}");
        }
    }

    #[test]
    fn json_fields_default_and_are_checked() {
        let read = |value| serde_json::from_value::<Circuit>(value);
        assert_eq!(read(json!({})).unwrap(), Circuit::default());
        let circuit = read(json!({"failures": 3})).unwrap();
        assert_eq!(circuit.failures().get(), 3);
        assert_eq!(circuit.successes().get(), 2);
        for bad in [
            json!({"failures": 0}),
            json!({"successes": 0}),
            json!({"cool_down_ms": 0}),
            json!({"failures": -1}),
            json!({"cooldown_ms": 5}),
            json!("5/30s/2"),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
        let written = serde_json::to_value(Circuit::default()).unwrap();
        assert_eq!(
            written,
            json!({"failures": 5, "cool_down_ms": 30000, "successes": 2})
        );
        assert!(Circuit::new(NonZeroU32::MIN, Duration::ZERO, NonZeroU32::MIN).is_err());
    }
}
