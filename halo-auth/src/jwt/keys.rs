//! The issuer's verification keys, parsed once when the key set is fetched.
//!
//! jsonwebtoken 12 keeps a JWK as its encoded components ([`jsonwebtoken::DecodingKey`]) and
//! rebuilds the public key on every `decode`: for RSA 2048 that is an `EVP_PKEY` and its
//! Montgomery context, about a fifth of the signature check. Its `CryptoProvider` is no way
//! around it: the provider is one per process (an application may install its own, once),
//! and its verifier factory is a plain function of the `DecodingKey`, with nowhere to keep a
//! parsed key. So each key of the set becomes an aws-lc-rs [`ParsedPublicKey`] here, bound to
//! the one algorithm it may verify, and [`Key::verify`] checks a signature with it: the same
//! aws-lc-rs verification algorithms jsonwebtoken's aws-lc-rs provider uses
//! (`RSA_PKCS1_2048_8192_SHA256`, `ECDSA_P256_SHA256_FIXED`, `ED25519`).

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ED25519, ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256,
    RsaPublicKeyComponents,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::Algorithm;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};

/// The usable keys of a key set.
pub(super) struct Keys {
    keys: Vec<Key>,
}

/// A verification key of the set, parsed.
pub(super) struct Key {
    kid: Option<String>,
    /// The one algorithm it verifies (from its type and curve; `alg`, when the JWK names one,
    /// must agree).
    algorithm: Algorithm,
    key: ParsedPublicKey,
}

impl Keys {
    /// The keys of `set` that may verify signatures with an accepted algorithm; the others
    /// (encryption keys, symmetric keys, other curves, malformed ones) are left out.
    pub(super) fn new(set: &[Jwk]) -> Self {
        Self {
            keys: set.iter().filter_map(Key::new).collect(),
        }
    }

    /// How many keys the set has.
    pub(super) fn len(&self) -> usize {
        self.keys.len()
    }

    /// The keys that may have signed a token with `kid` (any, without one) and `algorithm`.
    pub(super) fn matching<'a>(
        &'a self,
        kid: Option<&'a str>,
        algorithm: Algorithm,
    ) -> impl Iterator<Item = &'a Key> {
        self.keys
            .iter()
            .filter(move |key| kid.is_none() || key.kid.as_deref() == kid)
            .filter(move |key| key.algorithm == algorithm)
    }
}

impl Key {
    fn new(jwk: &Jwk) -> Option<Self> {
        if matches!(
            jwk.common.public_key_use,
            Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
        ) {
            return None;
        }
        let decode = |text: &str| URL_SAFE_NO_PAD.decode(text).ok();
        let (algorithm, key) = match &jwk.algorithm {
            AlgorithmParameters::RSA(rsa) => {
                let components = RsaPublicKeyComponents {
                    n: decode(&rsa.n)?,
                    e: decode(&rsa.e)?,
                };
                let key = components
                    .to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256)
                    .ok()?;
                (Algorithm::RS256, key)
            }
            AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
                // The uncompressed point; each coordinate is exactly 32 bytes (RFC 7518 §6.2.1).
                let (x, y) = (decode(&ec.x)?, decode(&ec.y)?);
                if x.len() != 32 || y.len() != 32 {
                    return None;
                }
                let point = [&[4][..], &x, &y].concat();
                let key = ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).ok()?;
                (Algorithm::ES256, key)
            }
            AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
                let key = ParsedPublicKey::new(&ED25519, decode(&okp.x)?).ok()?;
                (Algorithm::EdDSA, key)
            }
            _ => return None,
        };
        // A key that names its algorithm verifies that one only.
        let named = match jwk.common.key_algorithm {
            None => None,
            Some(KeyAlgorithm::RS256) => Some(Algorithm::RS256),
            Some(KeyAlgorithm::ES256) => Some(Algorithm::ES256),
            Some(KeyAlgorithm::EdDSA) => Some(Algorithm::EdDSA),
            Some(_) => return None,
        };
        if named.is_some_and(|named| named != algorithm) {
            return None;
        }
        Some(Self {
            kid: jwk.common.key_id.clone(),
            algorithm,
            key,
        })
    }

    /// Whether `signature` is this key's signature of `message` (a JWS's
    /// `header.payload`, as sent).
    pub(super) fn verify(&self, message: &[u8], signature: &[u8]) -> bool {
        self.key.verify_sig(message, signature).is_ok()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn jwk(value: serde_json::Value) -> Jwk {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn keys_are_bound_to_one_algorithm_and_bad_ones_left_out() {
        // A P-256 point (the tests' EC key).
        let (x, y) = (
            "w0sfqBFuhTXJEoZIugU39BmfUA7aqJgxyUa58_Q56sc",
            "oE4AQKwH7Z6CEv3Qz8wdoPSv1moVarjxmRLgaRstWCk",
        );
        let ec = |extra: serde_json::Value| {
            let mut key = json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": "ec"});
            key.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            jwk(key)
        };
        let keys = Keys::new(&[
            ec(json!({})),
            // Named for another algorithm than its type: left out.
            ec(json!({"alg": "RS256", "kid": "lies"})),
            // For encryption: left out.
            ec(json!({"use": "enc", "kid": "enc"})),
            // Not on the curve: left out.
            jwk(json!({"kty": "EC", "crv": "P-256", "x": y, "y": y, "kid": "off"})),
            // A coordinate one byte short: left out.
            jwk(json!({"kty": "EC", "crv": "P-256", "x": &x[..42], "y": y, "kid": "short"})),
            // Symmetric: left out.
            jwk(json!({"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"})),
        ]);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys.matching(Some("ec"), Algorithm::ES256).count(), 1);
        assert_eq!(keys.matching(None, Algorithm::ES256).count(), 1);
        assert_eq!(keys.matching(Some("ec"), Algorithm::RS256).count(), 0);
        assert_eq!(keys.matching(Some("lies"), Algorithm::RS256).count(), 0);
        assert_eq!(keys.matching(Some("hmac"), Algorithm::HS256).count(), 0);
        let key = keys.matching(None, Algorithm::ES256).next().unwrap();
        assert!(!key.verify(b"header.payload", &[0; 64]));
    }
}
