//! A JWS header, as far as the check needs it: its algorithm and its `kid`.
//!
//! jsonwebtoken's [`decode_header`](jsonwebtoken::decode_header) reads every parameter of
//! RFC 7515 into its [`Header`](jsonwebtoken::Header), buffering the object and allocating
//! for each member: on a token checked every time, a tenth of what is not the signature.
//! Nearly every access token's header is `{"alg": ..., "typ": ..., "kid": ...}`, so a header
//! of exactly that shape (those members at most, once each, strings all, the algorithm one
//! of the accepted ones) is read here, in one pass and without allocating but for the
//! `kid`. Any other header (another parameter, such as `crit` or `jwk`; a member twice; a
//! `null`; an algorithm not accepted; a header that is not JSON) goes to jsonwebtoken, and
//! its verdict stands, with the checks its `decode` adds (`crit` may name `b64` only, and
//! `b64` may not be `false`). The shape taken here is one that jsonwebtoken reads the same
//! way, so the verdict is jsonwebtoken's either way.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::ALGORITHMS;
use crate::Unauthenticated;

/// What the check reads of a token's header.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Header {
    pub(super) alg: Algorithm,
    pub(super) kid: Option<String>,
}

/// The longest header read without jsonwebtoken (decoded bytes).
const SHORT_HEADER_BYTES: usize = 256;

/// The header of `token` (`header.payload.signature`), if its algorithm is accepted.
pub(super) fn parse(token: &str) -> Result<Header, Unauthenticated> {
    // Split as jsonwebtoken splits: from the end (a header with a dot is not base64url).
    if let Some(header) = token
        .rsplit_once('.')
        .and_then(|(message, _)| message.rsplit_once('.'))
        .and_then(|(encoded, _)| common(encoded))
    {
        return Ok(header);
    }
    let header = jsonwebtoken::decode_header(token).map_err(|_| {
        Unauthenticated::new(
            "the bearer token is not a JWT signed with an accepted algorithm (RS256, ES256, EdDSA)",
        )
    })?;
    if !ALGORITHMS.contains(&header.alg) {
        return Err(Unauthenticated::new(format!(
            "the token's algorithm {:?} is not accepted (RS256, ES256, EdDSA)",
            header.alg
        )));
    }
    if !understood(&header) {
        return Err(Unauthenticated::new("the bearer token is not a valid JWT"));
    }
    Ok(Header {
        alg: header.alg,
        kid: header.kid,
    })
}

/// Whether jsonwebtoken's `decode` would take `header`: the only critical parameter it
/// understands is `b64` (RFC 7797), and only as `true`, the default.
fn understood(header: &jsonwebtoken::Header) -> bool {
    let Ok(b64) = header.extras.get::<bool>("b64") else {
        return false;
    };
    if b64 == Some(false) {
        return false;
    }
    match &header.crit {
        None => true,
        Some(crit) => b64.is_some() && crit.len() == 1 && crit[0] == "b64",
    }
}

/// The header `encoded` (base64url) when it has the common shape (see the module doc);
/// `None` for any other, left to jsonwebtoken.
fn common(encoded: &str) -> Option<Header> {
    let mut bytes = [0; SHORT_HEADER_BYTES];
    let length = URL_SAFE_NO_PAD.decode_slice(encoded, &mut bytes).ok()?;
    let mut deserializer = serde_json::Deserializer::from_slice(&bytes[..length]);
    let header = deserializer.deserialize_map(CommonHeader).ok()?;
    deserializer.end().ok()?;
    Some(header)
}

/// The members of the common shape.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Member {
    Alg,
    Typ,
    Kid,
}

/// Reads a header of the common shape; fails on any other.
struct CommonHeader;

impl<'de> Visitor<'de> for CommonHeader {
    type Value = Header;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JWS header of alg, typ and kid")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut alg, mut typ, mut kid) = (None, false, None);
        while let Some(member) = map.next_key_seed(MemberName)? {
            match member {
                Member::Alg if alg.is_none() => {
                    alg = Some(map.next_value_seed(Text(|alg: &str| {
                        ALGORITHMS
                            .iter()
                            .copied()
                            .find(|accepted| name(*accepted) == alg)
                    }))?);
                }
                Member::Typ if !typ => {
                    map.next_value_seed(Text(|_: &str| Some(())))?;
                    typ = true;
                }
                Member::Kid if kid.is_none() => {
                    kid = Some(map.next_value_seed(Text(|kid: &str| Some(kid.to_owned())))?);
                }
                _ => return Err(de::Error::custom("a member twice")),
            }
        }
        let alg = alg.ok_or_else(|| de::Error::missing_field("alg"))?;
        Ok(Header { alg, kid })
    }
}

/// The name jsonwebtoken gives an accepted algorithm in headers.
fn name(algorithm: Algorithm) -> &'static str {
    match algorithm {
        Algorithm::RS256 => "RS256",
        Algorithm::ES256 => "ES256",
        _ => "EdDSA",
    }
}

/// Reads a member's name: one of the common shape's, else fails.
struct MemberName;

impl<'de> DeserializeSeed<'de> for MemberName {
    type Value = Member;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl Visitor<'_> for MemberName {
    type Value = Member;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("alg, typ or kid")
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<Self::Value, E> {
        match name {
            "alg" => Ok(Member::Alg),
            "typ" => Ok(Member::Typ),
            "kid" => Ok(Member::Kid),
            _ => Err(E::custom("another member")),
        }
    }
}

/// Reads a string member, kept as `read` makes it (`None` fails).
struct Text<F>(F);

impl<'de, T, F: FnOnce(&str) -> Option<T>> DeserializeSeed<'de> for Text<F> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<T, F: FnOnce(&str) -> Option<T>> Visitor<'_> for Text<F> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> Result<Self::Value, E> {
        (self.0)(text).ok_or_else(|| E::custom("not taken"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(header: &str) -> String {
        format!("{}.e30.c2ln", URL_SAFE_NO_PAD.encode(header))
    }

    #[test]
    fn common_headers_are_read_as_jsonwebtoken_reads_them() {
        for header in [
            r#"{"alg":"RS256","typ":"JWT","kid":"rsa-1"}"#,
            r#" { "kid" : "k\u0031" , "alg" : "ES256" } "#,
            r#"{"alg":"EdDSA"}"#,
        ] {
            let token = token(header);
            let common = common(token.split_once('.').unwrap().0).expect(header);
            let reference = jsonwebtoken::decode_header(&token).unwrap();
            assert_eq!(common.alg, reference.alg, "{header}");
            assert_eq!(common.kid, reference.kid, "{header}");
            assert_eq!(parse(&token).unwrap(), common);
        }
    }

    #[test]
    fn other_headers_go_to_jsonwebtoken() {
        for (header, taken) in [
            (r#"{"alg":"RS256","kid":null}"#, true),
            (r#"{"alg":"RS256","cty":"JWT"}"#, true),
            (r#"{"alg":"RS256","crit":["b64"],"b64":true}"#, true),
            (r#"{"alg":"RS256","alg":"RS256"}"#, false),
            (r#"{"alg":"RS256","kid":5}"#, false),
            (r#"{"alg":"RS256","b64":false}"#, false),
            (r#"{"alg":"RS256","crit":["exp"]}"#, false),
            (r#"{"alg":"HS256"}"#, false),
            (r#"{"alg":"none"}"#, false),
            (r#"{"kid":"k"}"#, false),
            (r#"["alg","RS256"]"#, false),
            (r#"{"alg":"RS256"} x"#, false),
        ] {
            let token = token(header);
            assert!(
                common(token.split_once('.').unwrap().0).is_none(),
                "{header}"
            );
            assert_eq!(parse(&token).is_ok(), taken, "{header}");
        }
        let long = format!(r#"{{"alg":"RS256","kid":"{}"}}"#, "k".repeat(300));
        assert_eq!(parse(&token(&long)).unwrap().kid.unwrap().len(), 300);
        assert!(parse("no-dots").is_err());
    }
}
