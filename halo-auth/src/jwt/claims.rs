//! The claims of a JWT whose signature holds: read in one pass over the decoded payload,
//! borrowing its strings, and checked by the rules jsonwebtoken's `Validation` applies.
//!
//! jsonwebtoken checks claims only inside `decode`, which also checks the signature with a
//! key it rebuilds every time (see `keys.rs`), and it reads the payload twice (once into the
//! caller's type, once into its own). Its checks are therefore restated here, one for one,
//! with the settings [`JwtAuthenticator`](super::JwtAuthenticator) always gave it
//! (`exp`, `iss` and `aud` required, `nbf` checked when present, the leeway on both):
//!
//! - a claim the rules read must appear at most once (`exp`, `nbf`, `sub`, `iss`, `aud`);
//!   for the others, the last one counts;
//! - `exp` and `nbf` are NumericDates: a non-negative integer, or a finite non-negative
//!   number, rounded; anything else (`null`, a string, a negative number) is malformed;
//! - `iss` and `aud` are a string or an array of strings (`null` counts as absent); an array
//!   passes when one of its members is the issuer, or one of the audiences;
//! - the order of the refusals: a required claim missing or malformed, `nbf` malformed,
//!   expired (`exp` before now less the leeway), not yet valid (`nbf` after now plus the
//!   leeway), another issuer, another audience.
//!
//! `tests/jwt_verdicts.rs` holds both to the same verdicts (jsonwebtoken's `decode` is its
//! reference for each crafted token).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::super::oauth::{self, cache};
use super::super::{Principal, Unauthenticated};

/// What a token must claim, besides its signature.
pub(super) struct Rules {
    pub(super) issuer: String,
    pub(super) audiences: Vec<String>,
    /// Seconds `exp` and `nbf` may be off.
    pub(super) leeway: u64,
    /// The claim that names the caller's tenant, if any.
    pub(super) tenant_claim: Option<String>,
}

/// The claims the rules and the principal read, in the order of [`Slot`].
const NAMES: [&str; 8] = [
    "exp",
    "nbf",
    "sub",
    "iss",
    "aud",
    "client_id",
    "scope",
    "scp",
];

/// Where a claim is kept: an index into [`NAMES`], or [`TENANT`].
type Slot = usize;
const EXP: Slot = 0;
const NBF: Slot = 1;
const ISS: Slot = 3;
const AUD: Slot = 4;
/// The claims that may appear once only (the others: the last one counts).
const ONCE: Slot = 5;
/// The slot of the tenant claim, when it is none of [`NAMES`].
const TENANT: Slot = NAMES.len();

/// A claim's value, as far as the rules need it.
enum Claim<'a> {
    Null,
    Text(Cow<'a, str>),
    /// A number: `Some` when it is a NumericDate (see the module doc), else `None`.
    Number(Option<u64>),
    /// An array: its strings, and whether it had nothing else.
    List {
        texts: Vec<Cow<'a, str>>,
        only_texts: bool,
    },
    /// A boolean or an object.
    Other,
}

/// The claims of a payload that the rules and the principal read.
pub(super) struct Claims<'a> {
    slots: [Option<Claim<'a>>; NAMES.len() + 1],
    /// The name of the tenant claim, if one is configured.
    tenant: Option<&'a str>,
}

/// A refusal of the claims: what the caller is told.
fn refuse(why: &str) -> Unauthenticated {
    Unauthenticated::new(why)
}

fn malformed() -> Unauthenticated {
    refuse("the bearer token is not a valid JWT")
}

impl Rules {
    /// The principal that `payload` (a JWS payload, base64url-decoded) names and its `exp`,
    /// if its claims hold.
    pub(super) fn check(&self, payload: &str) -> Result<(Principal, u64), Unauthenticated> {
        let claims =
            Claims::parse(payload, self.tenant_claim.as_deref()).map_err(|_| malformed())?;
        let expires = self.validate(&claims)?;
        let principal = oauth::principal(&claims, self.tenant_claim.as_deref())?;
        Ok((principal, expires))
    }

    /// `exp`, if the claims hold.
    fn validate(&self, claims: &Claims<'_>) -> Result<u64, Unauthenticated> {
        let exp = claims.date(EXP);
        let nbf = claims.date(NBF);
        let iss = claims.names(ISS);
        let aud = claims.names(AUD);
        let Some(Ok(exp)) = exp else {
            return Err(refuse("the token lacks the exp claim"));
        };
        let Some(Ok(iss)) = iss else {
            return Err(refuse("the token lacks the iss claim"));
        };
        let Some(Ok(aud)) = aud else {
            return Err(refuse("the token lacks the aud claim"));
        };
        if matches!(nbf, Some(Err(()))) {
            return Err(malformed());
        }
        let now = cache::now_unix();
        if exp < now.saturating_sub(self.leeway) {
            return Err(refuse("the token has expired"));
        }
        if matches!(nbf, Some(Ok(nbf)) if nbf > now.saturating_add(self.leeway)) {
            return Err(refuse("the token is not valid yet (nbf)"));
        }
        if !iss.iter().any(|iss| *iss == self.issuer) {
            return Err(refuse("the token is not from this API's issuer (iss)"));
        }
        if !aud
            .iter()
            .any(|aud| self.audiences.iter().any(|ours| ours == aud))
        {
            return Err(refuse("the token is not for this API (aud)"));
        }
        Ok(exp)
    }
}

impl<'a> Claims<'a> {
    /// The claims of `payload`, a JSON object; `tenant` names the tenant claim.
    fn parse(payload: &'a str, tenant: Option<&'a str>) -> Result<Self, serde_json::Error> {
        let mut deserializer = serde_json::Deserializer::from_str(payload);
        let claims = deserializer.deserialize_map(ClaimsVisitor { tenant })?;
        deserializer.end()?;
        Ok(claims)
    }

    /// A NumericDate claim: `None` when absent, `Err` when malformed.
    fn date(&self, slot: Slot) -> Option<Result<u64, ()>> {
        self.slots[slot].as_ref().map(|claim| match claim {
            Claim::Number(Some(date)) => Ok(*date),
            _ => Err(()),
        })
    }

    /// A string-or-array claim (`iss`, `aud`): `None` when absent or `null`, `Err` when
    /// malformed.
    fn names(&self, slot: Slot) -> Option<Result<&[Cow<'a, str>], ()>> {
        match self.slots[slot].as_ref()? {
            Claim::Null => None,
            Claim::Text(text) => Some(Ok(std::slice::from_ref(text))),
            Claim::List {
                texts,
                only_texts: true,
            } => Some(Ok(texts)),
            _ => Some(Err(())),
        }
    }

    /// The slot of the claim `name`, if it is kept.
    fn slot(&self, name: &str) -> Option<Slot> {
        slot(name, self.tenant)
    }
}

impl oauth::Claims for Claims<'_> {
    fn string(&self, name: &str) -> Option<&str> {
        match self.slots[self.slot(name)?].as_ref()? {
            Claim::Text(text) => Some(text),
            _ => None,
        }
    }

    fn strings(&self, name: &str) -> Option<impl Iterator<Item = &str>> {
        match self.slots[self.slot(name)?].as_ref()? {
            Claim::List { texts, .. } => Some(texts.iter().map(|text| &**text)),
            _ => None,
        }
    }
}

/// The slot of the claim `name`, if it is kept (`tenant` names the tenant claim).
fn slot(name: &str, tenant: Option<&str>) -> Option<Slot> {
    NAMES
        .iter()
        .position(|known| *known == name)
        .or_else(|| (tenant == Some(name)).then_some(TENANT))
}

/// Reads the payload's object, keeping the claims of [`NAMES`] and the tenant claim.
struct ClaimsVisitor<'t> {
    tenant: Option<&'t str>,
}

impl<'de> Visitor<'de> for ClaimsVisitor<'de> {
    type Value = Claims<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of claims")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut claims = Claims {
            slots: Default::default(),
            tenant: self.tenant,
        };
        while let Some(slot) = map.next_key_seed(KeySeed {
            tenant: self.tenant,
        })? {
            let Some(slot) = slot else {
                map.next_value::<Skip>()?;
                continue;
            };
            let claim = map.next_value::<Claim<'de>>()?;
            if claims.slots[slot].replace(claim).is_some() && slot < ONCE {
                return Err(de::Error::custom(format_args!(
                    "duplicate claim {}",
                    NAMES[slot]
                )));
            }
        }
        Ok(claims)
    }
}

/// Reads a claim's name: its slot, or `None` for a claim not kept. Compares without
/// allocating (an escaped name is unescaped into serde_json's scratch space).
struct KeySeed<'t> {
    tenant: Option<&'t str>,
}

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<Slot>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<Slot>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a claim name")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        Ok(slot(name, self.tenant))
    }
}

impl<'de> de::Deserialize<'de> for Claim<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ClaimVisitor)
    }
}

/// Reads any JSON value as a [`Claim`].
struct ClaimVisitor;

impl<'de> Visitor<'de> for ClaimVisitor {
    type Value = Claim<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Claim::Null)
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Claim::Null)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Claim::Other)
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Self::Value, E> {
        Ok(Claim::Number(Some(value)))
    }

    /// serde_json gives negative integers only: not a NumericDate.
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Claim::Number(None))
    }

    /// Rounded, as jsonwebtoken does, when finite, non-negative and below `u64::MAX`.
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )] // checked: finite, within 0..u64::MAX
    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Self::Value, E> {
        let date = (value.is_finite() && value >= 0.0 && value < u64::MAX as f64)
            .then(|| value.round() as u64);
        Ok(Claim::Number(date))
    }

    fn visit_borrowed_str<E: de::Error>(self, text: &'de str) -> Result<Self::Value, E> {
        Ok(Claim::Text(Cow::Borrowed(text)))
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        Ok(Claim::Text(Cow::Owned(text.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (mut texts, mut only_texts) = (Vec::new(), true);
        while let Some(item) = seq.next_element::<Claim<'de>>()? {
            match item {
                Claim::Text(text) => texts.push(text),
                _ => only_texts = false,
            }
        }
        Ok(Claim::List { texts, only_texts })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<Skip, Skip>()?.is_some() {}
        Ok(Claim::Other)
    }
}

/// A value read and dropped, but read as strictly as a `serde_json::Value` would be (unlike
/// serde's `IgnoredAny`, which lets a lone surrogate escape or an out-of-range number pass).
struct Skip;

impl<'de> de::Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Self)
    }
}

impl<'de> Visitor<'de> for Skip {
    type Value = Self;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(Self)
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Self)
    }

    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Self)
    }

    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Self)
    }

    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Self)
    }

    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(Self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<Self>()?.is_some() {}
        Ok(Self)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<Self, Self>()?.is_some() {}
        Ok(Self)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rules(tenant_claim: Option<&str>) -> Rules {
        Rules {
            issuer: "https://id.example".to_owned(),
            audiences: vec!["https://api.example".to_owned(), "api".to_owned()],
            leeway: 60,
            tenant_claim: tenant_claim.map(str::to_owned),
        }
    }

    /// The verdict on the claims `value` with `changes` (a `null` removes a claim).
    fn check(changes: serde_json::Value) -> Result<(Principal, u64), String> {
        let mut claims = json!({"iss": "https://id.example", "aud": "api", "sub": "u1",
            "exp": cache::now_unix() + 300});
        for (name, value) in changes.as_object().unwrap() {
            if value.is_null() {
                claims.as_object_mut().unwrap().remove(name);
            } else {
                claims[name] = value.clone();
            }
        }
        rules(None)
            .check(&claims.to_string())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn numeric_dates_and_names_as_jsonwebtoken_reads_them() {
        let now = cache::now_unix();
        assert!(check(json!({})).is_ok());
        #[allow(clippy::cast_precision_loss)]
        let float = now as f64 + 300.4;
        assert_eq!(check(json!({"exp": float})).unwrap().1, now + 300);
        assert!(check(json!({"aud": ["other", "api"]})).is_ok());
        assert!(check(json!({"iss": ["https://id.example"]})).is_ok());
        assert!(check(json!({"nbf": now + 30})).is_ok());
        for (changes, says) in [
            (json!({"exp": null}), "exp"),
            (json!({"exp": "soon"}), "exp"),
            (json!({"exp": -1}), "exp"),
            (json!({"iss": 7}), "iss"),
            (json!({"aud": ["api", 7]}), "aud"),
            (json!({"aud": []}), "not for this API"),
            (json!({"exp": now - 61}), "expired"),
            (json!({"nbf": now + 61}), "not valid yet"),
            (json!({"nbf": "now"}), "not a valid JWT"),
            (json!({"iss": "https://other.example"}), "issuer"),
            (json!({"aud": "https://other.example"}), "not for this API"),
            (json!({"sub": null}), "no subject"),
        ] {
            let error = check(changes.clone()).unwrap_err();
            assert!(error.contains(says), "{changes}: {error}");
        }
    }

    #[test]
    fn malformed_payloads_and_duplicate_claims_are_refused() {
        let exp = cache::now_unix() + 300;
        let object = format!(r#"{{"iss":"https://id.example","aud":"api","sub":"u","exp":{exp}"#);
        let rules = rules(None);
        assert!(rules.check(&format!("{object}}}")).is_ok());
        for payload in [
            format!(r#"{object},"exp":{exp}}}"#),
            format!(r#"{object},"sub":"v"}}"#),
            format!(r#"{object},"nbf":null}}"#),
            format!(r#"{object},"x":1e400}}"#),
            format!(r#"{object},"x":"\ud800"}}"#),
            format!("{object}}} trailing"),
            object.clone(),
            "[1, 2]".to_owned(),
            String::new(),
        ] {
            assert!(rules.check(&payload).is_err(), "{payload}");
        }
        // The last `scope` counts; escaped names are the names they spell.
        let (principal, _) = rules
            .check(&format!(
                r#"{object},"scope":"a","sc\u006fpe":"b c","x":{{"y":[1,{{}}]}}}}"#
            ))
            .unwrap();
        assert_eq!(principal.scopes().collect::<Vec<_>>(), ["b", "c"]);
    }

    #[test]
    fn the_principal_and_its_tenant() {
        let exp = cache::now_unix() + 300;
        let payload = json!({"iss": "https://id.example", "aud": ["api"], "client_id": "agent",
            "scope": "a", "scp": ["b", 5, "c"], "org": "acme", "exp": exp})
        .to_string();
        let (principal, expires) = rules(Some("org")).check(&payload).unwrap();
        assert_eq!(principal.id(), "agent");
        assert_eq!(principal.scopes().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(principal.tenant(), Some("acme"));
        assert_eq!(expires, exp);
        // A tenant claim that is also a registered one.
        let (principal, _) = rules(Some("iss")).check(&payload).unwrap();
        assert_eq!(principal.tenant(), Some("https://id.example"));
        let (principal, _) = rules(Some("exp")).check(&payload).unwrap();
        assert_eq!(principal.tenant(), None);
    }
}
