//! A JWT issuer played on loopback, for the `jwt` benchmark (and any test that includes this
//! file with `#[path]`): its keys made when it starts (RSA 2048 and EC P-256, never written
//! down), its OpenID Connect discovery document and key set served by a small axum app that
//! counts the key-set fetches, and access tokens signed with those keys.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair, KeySize};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use halo_axum::{JwtAuthenticator, JwtAuthenticatorBuilder};
use halo_tests::TestServer;
use jsonwebtoken::jwk::{Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// The API's resource identifier: the tokens' `aud`.
pub(crate) const AUDIENCE: &str = "https://api.halo.bench";
/// The `kid` of the issuer's RSA key.
pub(crate) const RSA_KID: &str = "rsa-1";
/// The `kid` of the issuer's EC P-256 key.
pub(crate) const EC_KID: &str = "ec-1";

/// The issuer: a loopback server and the private halves of the keys it publishes.
pub(crate) struct Issuer {
    server: TestServer,
    fetches: Arc<AtomicUsize>,
    rsa: EncodingKey,
    ec: EncodingKey,
    rsa_public: Vec<u8>,
    ec_public: Vec<u8>,
}

/// What the issuer's routes share.
struct Published {
    keys: Value,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    /// Makes the keys and starts serving `/.well-known/openid-configuration` and `/jwks`.
    /// Must be called inside a Tokio runtime, which then runs the server.
    pub(crate) async fn start() -> Self {
        let (rsa, rsa_public) = rsa_key();
        let (ec, ec_public) = ec_key();
        let set = JwkSet {
            keys: vec![
                public_jwk(&rsa, Algorithm::RS256, RSA_KID),
                public_jwk(&ec, Algorithm::ES256, EC_KID),
            ],
        };
        let fetches = Arc::new(AtomicUsize::new(0));
        let published = Arc::new(Published {
            keys: serde_json::to_value(&set).expect("a key set serialises"),
            fetches: Arc::clone(&fetches),
        });
        let router = Router::new()
            .route(
                "/.well-known/openid-configuration",
                get(|headers: axum::http::HeaderMap| async move {
                    let host = headers[axum::http::header::HOST]
                        .to_str()
                        .expect("a Host header");
                    let url = format!("http://{host}");
                    Json(json!({"issuer": url, "jwks_uri": format!("{url}/jwks")}))
                }),
            )
            .route(
                "/jwks",
                get(|State(published): State<Arc<Published>>| async move {
                    published.fetches.fetch_add(1, Ordering::SeqCst);
                    Json(published.keys.clone())
                }),
            )
            .with_state(published);
        Self {
            server: halo_tests::spawn(router).await,
            fetches,
            rsa,
            ec,
            rsa_public,
            ec_public,
        }
    }

    /// The RSA public key as DER (PKCS #1 `RSAPublicKey`).
    pub(crate) fn rsa_public_der(&self) -> &[u8] {
        &self.rsa_public
    }

    /// The EC public key as an uncompressed P-256 point.
    pub(crate) fn ec_public_point(&self) -> &[u8] {
        &self.ec_public
    }

    /// The issuer identifier: `http://127.0.0.1:<port>`.
    pub(crate) fn url(&self) -> String {
        self.server.base_url()
    }

    /// How many times the key set was fetched so far.
    pub(crate) fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }

    /// A builder for an authenticator of this issuer's tokens for [`AUDIENCE`].
    pub(crate) fn authenticator(&self) -> JwtAuthenticatorBuilder {
        JwtAuthenticator::builder(self.url()).audience(AUDIENCE)
    }

    /// A token for `sub` with `scope`, valid for an hour, signed with RS256 under `kid`
    /// (the issuer's [`RSA_KID`], or a `kid` the issuer does not have).
    pub(crate) fn rs256(&self, kid: &str, sub: &str, scope: &str) -> String {
        self.sign(Algorithm::RS256, kid, &self.rsa, sub, scope)
    }

    /// The same, signed with ES256 (the issuer's key is [`EC_KID`]).
    pub(crate) fn es256(&self, kid: &str, sub: &str, scope: &str) -> String {
        self.sign(Algorithm::ES256, kid, &self.ec, sub, scope)
    }

    fn sign(
        &self,
        algorithm: Algorithm,
        kid: &str,
        key: &EncodingKey,
        sub: &str,
        scope: &str,
    ) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_secs();
        let claims = json!({
            "iss": self.url(), "aud": AUDIENCE, "sub": sub, "scope": scope,
            "iat": now, "exp": now + 3600,
        });
        let mut header = Header::new(algorithm);
        header.kid = Some(kid.to_owned());
        jsonwebtoken::encode(&header, &claims, key).expect("a signed token")
    }
}

/// A fresh RSA 2048 private key, and its public key as DER.
fn rsa_key() -> (EncodingKey, Vec<u8>) {
    let pair = KeyPair::generate(KeySize::Rsa2048).expect("an RSA key");
    let public = pair.public_key().as_ref().to_vec();
    let pkcs8 = pair.as_der().expect("a PKCS #8 document");
    let body = STANDARD.encode(pkcs8.as_ref());
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|line| std::str::from_utf8(line).expect("base64 is ASCII"))
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    let key = EncodingKey::from_rsa_pem(pem.as_bytes()).expect("an RSA signing key");
    (key, public)
}

/// A fresh EC P-256 private key, and its public point.
fn ec_key() -> (EncodingKey, Vec<u8>) {
    let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("an EC key");
    let pkcs8 = pair.to_pkcs8v1().expect("a PKCS #8 document");
    let public = pair.public_key().as_ref().to_vec();
    (EncodingKey::from_ec_der(pkcs8.as_ref()), public)
}

/// The public JWK of `key`, for signatures with `algorithm`, named `kid`.
fn public_jwk(key: &EncodingKey, algorithm: Algorithm, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(key, algorithm).expect("a public JWK");
    jwk.common.key_id = Some(kid.to_owned());
    jwk.common.public_key_use = Some(PublicKeyUse::Signature);
    jwk
}
