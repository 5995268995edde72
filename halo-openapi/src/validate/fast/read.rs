//! A body read against its compiled schema, checked as the deserializer meets each value,
//! without building it.

use std::cmp::Ordering;
use std::fmt;

use serde::Deserialize as _;
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Number, Value};

use super::email::plain_email;
use super::{Checks, Fast, Node, Types};

/// Integers up to this magnitude convert to `f64` exactly.
const EXACT_IN_F64: u64 = 1 << 53;

impl Fast {
    /// Whether `bytes` are one JSON value that certainly fits the schema. `false` means
    /// "not known": the full check decides.
    pub(crate) fn accepts(&self, bytes: &[u8]) -> bool {
        // One pass over the whole body checks its UTF-8 faster than string by string.
        let Ok(text) = std::str::from_utf8(bytes) else {
            return false;
        };
        let mut deserializer = serde_json::Deserializer::from_str(text);
        (&self.root).deserialize(&mut deserializer).is_ok() && deserializer.end().is_ok()
    }
}

/// A number as read from the body.
#[derive(Clone, Copy)]
enum Num {
    Unsigned(u64),
    Signed(i64),
    Float(f64),
}

impl Num {
    /// How `self` compares with `limit`, when that can be told exactly.
    fn compare(self, limit: &Number) -> Option<Ordering> {
        let limit = if let Some(u) = limit.as_u64() {
            Self::Unsigned(u)
        } else if let Some(i) = limit.as_i64() {
            Self::Signed(i)
        } else {
            Self::Float(limit.as_f64()?)
        };
        match (self, limit) {
            (Self::Float(a), Self::Float(b)) => a.partial_cmp(&b),
            (Self::Float(a), int) => int.exact_f64().and_then(|b| a.partial_cmp(&b)),
            (int, Self::Float(b)) => int.exact_f64().and_then(|a| a.partial_cmp(&b)),
            (a, b) => Some(a.wide().cmp(&b.wide())),
        }
    }

    fn wide(self) -> i128 {
        match self {
            Self::Unsigned(u) => i128::from(u),
            Self::Signed(i) => i128::from(i),
            // Floats are compared as floats; never asked.
            Self::Float(_) => 0,
        }
    }

    #[allow(clippy::cast_precision_loss)] // guarded: only magnitudes f64 holds exactly
    fn exact_f64(self) -> Option<f64> {
        match self {
            Self::Unsigned(u) if u <= EXACT_IN_F64 => Some(u as f64),
            Self::Signed(i) if i.unsigned_abs() <= EXACT_IN_F64 => Some(i as f64),
            _ => None,
        }
    }
}

/// "Not known to fit": the reading stops and the full check decides.
fn unsure<E: de::Error>() -> E {
    E::custom("not known to fit")
}

fn check(fits: bool) -> Result<(), ()> {
    if fits { Ok(()) } else { Err(()) }
}

impl<'de> DeserializeSeed<'de> for &Node {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        match self {
            Node::Any => IgnoredAny::deserialize(deserializer).map(drop),
            Node::Never => Err(unsure()),
            Node::Checked(checks) => deserializer.deserialize_any(&**checks),
            Node::Delegate(validator) => {
                let value = Value::deserialize(deserializer)?;
                if validator.is_valid(&value) {
                    Ok(())
                } else {
                    Err(unsure())
                }
            }
        }
    }
}

impl Checks {
    fn number<E: de::Error>(&self, number: Num) -> Result<(), E> {
        let above = |limit: &Option<Number>, strict: bool| {
            limit
                .as_ref()
                .is_none_or(|limit| match number.compare(limit) {
                    Some(Ordering::Greater) => true,
                    Some(Ordering::Equal) => !strict,
                    _ => false,
                })
        };
        let below = |limit: &Option<Number>, strict: bool| {
            limit
                .as_ref()
                .is_none_or(|limit| match number.compare(limit) {
                    Some(Ordering::Less) => true,
                    Some(Ordering::Equal) => !strict,
                    _ => false,
                })
        };
        check(
            above(&self.minimum, false)
                && above(&self.exclusive_minimum, true)
                && below(&self.maximum, false)
                && below(&self.exclusive_maximum, true),
        )
        .map_err(|()| unsure())
    }

    fn integer<E: de::Error>(&self, number: Num) -> Result<(), E> {
        if !self.types.has(Types::INTEGER) && !self.types.has(Types::NUMBER) {
            return Err(unsure());
        }
        self.number(number)
    }

    /// Whether a string's length in characters is within `minLength`..=`maxLength`. A
    /// character takes one to four bytes in UTF-8, so the byte length mostly decides without
    /// counting.
    fn length_within(&self, value: &str) -> bool {
        let (min, max) = (self.min_length, self.max_length);
        if min.is_none() && max.is_none() {
            return true;
        }
        let bytes = value.len() as u64;
        if Self::within(bytes, max.map(|_| 0), max) && Self::within(bytes.div_ceil(4), min, None) {
            return true;
        }
        Self::within(value.chars().count() as u64, min, max)
    }

    fn within(count: u64, min: Option<u64>, max: Option<u64>) -> bool {
        min.is_none_or(|min| count >= min) && max.is_none_or(|max| count <= max)
    }
}

impl<'de> Visitor<'de> for &Checks {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        check(self.types.has(Types::NULL)).map_err(|()| unsure())
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        check(self.types.has(Types::BOOLEAN)).map_err(|()| unsure())
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<(), E> {
        self.integer(Num::Unsigned(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<(), E> {
        self.integer(Num::Signed(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<(), E> {
        // A float with no fraction is an integer to JSON Schema; left to the full check.
        if !self.types.has(Types::NUMBER) {
            return Err(unsure());
        }
        self.number(Num::Float(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<(), E> {
        if !self.types.has(Types::STRING) || !self.length_within(value) {
            return Err(unsure());
        }
        let fits = |validator: &Option<jsonschema::Validator>| {
            validator
                .as_ref()
                .is_none_or(|v| v.is_valid(&Value::String(value.to_owned())))
        };
        let email = self.email.is_none() || plain_email(value) || fits(&self.email);
        check(email && fits(&self.string_extra)).map_err(|()| unsure())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        if !self.types.has(Types::ARRAY) {
            return Err(unsure());
        }
        let mut length = 0u64;
        while seq.next_element_seed(&self.items)?.is_some() {
            length += 1;
        }
        check(Checks::within(length, self.min_items, self.max_items)).map_err(|()| unsure())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        if !self.types.has(Types::OBJECT) {
            return Err(unsure());
        }
        let mut seen = 0u64;
        while let Some(key) = map.next_key_seed(Key(self))? {
            let node = match key {
                Slot::Declared(index) => &self.properties[index].1,
                Slot::Other(_) => &self.additional,
            };
            if let Slot::Declared(bit) | Slot::Other(Some(bit)) = key {
                // A repeated name: a parsed value keeps the last; left to the full check.
                if seen & (1 << bit) != 0 {
                    return Err(unsure());
                }
                seen |= 1 << bit;
            }
            map.next_value_seed(node)?;
        }
        check(seen & self.required == self.required).map_err(|()| unsure())
    }
}

/// Where a property name leads: a declared property, or the others (with the bit of a
/// required but undeclared name).
#[derive(Clone, Copy)]
enum Slot {
    Declared(usize),
    Other(Option<usize>),
}

/// Reads a property name into its [`Slot`] without allocating.
struct Key<'a>(&'a Checks);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = Slot;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Slot, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = Slot;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a property name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Slot, E> {
        let checks = self.0;
        Ok(
            match checks.properties.binary_search_by(|(p, _)| (**p).cmp(name)) {
                Ok(index) => Slot::Declared(index),
                Err(_) => Slot::Other(
                    checks
                        .required_other
                        .iter()
                        .position(|r| &**r == name)
                        .map(|index| checks.properties.len() + index),
                ),
            },
        )
    }
}
