//! `JwtAuthenticator` checking every token afresh (`cache_ttl(Duration::ZERO)`: keys parsed
//! once, the signature checked with aws-lc-rs, the claims read in one pass) against the
//! verdicts of `jsonwebtoken::decode`, the check it replaces: tokens crafted one oddity at a
//! time (claims of the wrong type, repeated claims, critical header parameters, a key of
//! another type under the token's `kid`, broken signatures...) are sent over HTTP to an API
//! behind the authenticator, which must take exactly the tokens jsonwebtoken takes, with
//! the settings `JwtAuthenticator` documents, and make the same caller of them. The cases
//! that matter most for security also say which way they must go, so the reference cannot
//! drift with the code under test.
#![allow(missing_docs)]

use crate::common;

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair as _};
use axum::routing::get;
use axum::{Json, Router};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use common::jwt_keys::{EC_PRIVATE, EC_X, EC_Y, RSA_N, RSA_PRIVATE, RSA_PUBLIC, ec_jwk, rsa_jwk};
use halo_axum::{HaloBuilder, JwtAuthenticator, Principal};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Validation};
use reqwest::StatusCode;
use reqwest::header::WWW_AUTHENTICATE;
use serde_json::{Map, Value, json};

const AUDIENCE: &str = "https://api.halo.test";
const RSA_KID: &str = "rsa-1";
const EC_KID: &str = "ec-1";
const ED_KID: &str = "ed-1";
const TENANT_CLAIM: &str = "org";

/// The issuer's keys: private halves to sign with, public ones as jsonwebtoken reads them.
struct Keys {
    rsa: EncodingKey,
    ec: EncodingKey,
    ed: EncodingKey,
    /// An Ed25519 key the issuer does not have.
    stranger: EncodingKey,
    stranger_x: String,
    /// `(kid, algorithm, public key)`, as the key set publishes them.
    public: Vec<(&'static str, Algorithm, DecodingKey)>,
    set: Value,
}

/// A fresh Ed25519 key: its PKCS#8 document and its public `x`.
fn ed25519() -> (EncodingKey, String) {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    (
        EncodingKey::from_ed_der(pkcs8.as_ref()),
        URL_SAFE_NO_PAD.encode(pair.public_key().as_ref()),
    )
}

fn keys() -> Keys {
    let (ed, ed_x) = ed25519();
    let (stranger, stranger_x) = ed25519();
    let set = json!({"keys": [
        rsa_jwk(RSA_KID, RSA_N),
        ec_jwk(EC_KID),
        {"kty": "OKP", "crv": "Ed25519", "kid": ED_KID, "x": ed_x},
    ]});
    Keys {
        rsa: EncodingKey::from_rsa_pem(RSA_PRIVATE.as_bytes()).unwrap(),
        ec: EncodingKey::from_ec_pem(EC_PRIVATE.as_bytes()).unwrap(),
        ed,
        stranger,
        stranger_x,
        public: vec![
            (
                RSA_KID,
                Algorithm::RS256,
                DecodingKey::from_rsa_components(RSA_N, "AQAB").unwrap(),
            ),
            (
                EC_KID,
                Algorithm::ES256,
                DecodingKey::from_ec_components(EC_X, EC_Y).unwrap(),
            ),
            (
                ED_KID,
                Algorithm::EdDSA,
                DecodingKey::from_ed_components(&ed_x).unwrap(),
            ),
        ],
        set,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// A JWS of `header` and `payload` (both as written), signed with `key` by `algorithm`.
fn jws(header: &str, payload: &[u8], key: &EncodingKey, algorithm: Algorithm) -> String {
    let message = format!("{}.{}", b64(header.as_bytes()), b64(payload));
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, algorithm).unwrap();
    format!("{message}.{signature}")
}

/// A JOSE header as written: `alg` and, when given, `kid`.
fn jose_header(alg: &str, kid: Option<&str>) -> String {
    match kid {
        Some(kid) => format!(r#"{{"alg":"{alg}","kid":"{kid}"}}"#),
        None => format!(r#"{{"alg":"{alg}"}}"#),
    }
}

/// Which way a case must go, whatever the reference says.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Must {
    Pass,
    Fail,
    /// As jsonwebtoken says.
    Agree,
}

/// The caller jsonwebtoken's check (the one `JwtAuthenticator` made before it parsed its keys
/// once) finds in `token`, as the API shows it: `None` when refused.
fn reference(token: &str, keys: &Keys, issuer: &str) -> Option<Value> {
    let header = jsonwebtoken::decode_header(token).ok()?;
    if ![Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA].contains(&header.alg) {
        return None;
    }
    let mut validation = Validation::new(header.alg);
    validation.leeway = 60;
    validation.validate_nbf = true;
    validation.set_issuer(&[issuer]);
    validation.set_audience(&[AUDIENCE]);
    validation.set_required_spec_claims(&["exp", "iss", "aud"]);
    let claims = keys
        .public
        .iter()
        .filter(|(kid, algorithm, _)| {
            *algorithm == header.alg && header.kid.as_deref().is_none_or(|named| named == *kid)
        })
        .find_map(|(_, _, key)| {
            jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation).ok()
        })?
        .claims;
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .filter(|text| !text.is_empty())
    };
    let id = text("sub").or_else(|| text("client_id"))?;
    let mut scopes: BTreeSet<&str> = text("scope")
        .map(|scope| scope.split_whitespace().collect())
        .unwrap_or_default();
    match claims.get("scp") {
        Some(Value::Array(items)) => scopes.extend(items.iter().filter_map(Value::as_str)),
        Some(Value::String(scp)) => scopes.extend(scp.split_whitespace()),
        _ => {}
    }
    Some(json!({"caller": id, "scopes": scopes, "tenant": text(TENANT_CLAIM)}))
}

/// The claims of a valid token, with `changes` (a `null` removes a claim), as JSON text.
fn claims(issuer: &str, changes: &Value) -> String {
    let mut claims = json!({"iss": issuer, "aud": AUDIENCE, "sub": "reader-1",
        "scope": "books:read", "iat": now(), "exp": now() + 300});
    for (name, value) in changes.as_object().unwrap() {
        if value.is_null() {
            claims.as_object_mut().unwrap().remove(name);
        } else {
            claims[name] = value.clone();
        }
    }
    claims.to_string()
}

/// The cases: `(name, token, must)`.
#[allow(clippy::too_many_lines, clippy::cast_precision_loss)] // one line or so per case; `exp` as a float
fn cases(keys: &Keys, issuer: &str) -> Vec<(String, String, Must)> {
    let rs256 = |payload: &str| {
        jws(
            &format!(r#"{{"alg":"RS256","typ":"JWT","kid":"{RSA_KID}"}}"#),
            payload.as_bytes(),
            &keys.rsa,
            Algorithm::RS256,
        )
    };
    let valid = claims(issuer, &json!({}));
    // The valid claims without the closing brace, to append raw members to.
    let open = &valid[..valid.len() - 1];
    let now = now();
    let mut cases: Vec<(String, String, Must)> = Vec::new();
    let mut add = |name: &str, token: String, must: Must| {
        cases.push((name.to_owned(), token, must));
    };

    add("valid", rs256(&valid), Must::Pass);
    // Claims: one change each, against the reference.
    for changes in [
        json!({"exp": now as f64 + 300.6}),
        json!({"exp": "soon"}),
        json!({"exp": -5}),
        json!({"exp": null}),
        json!({"exp": now - 30}),
        json!({"exp": now - 120}),
        json!({"exp": 1e19}),
        json!({"exp": u64::MAX}),
        json!({"exp": 2e19}),
        json!({"exp": true}),
        json!({"nbf": now + 30}),
        json!({"nbf": now + 120}),
        json!({"nbf": "now"}),
        json!({"nbf": 1.5}),
        json!({"nbf": [now]}),
        json!({"iss": [issuer]}),
        json!({"iss": ["https://other.example", issuer]}),
        json!({"iss": ["https://other.example"]}),
        json!({"iss": []}),
        json!({"iss": 5}),
        json!({"iss": null}),
        json!({"iss": "https://other.example"}),
        json!({"aud": [AUDIENCE]}),
        json!({"aud": ["https://other.example", AUDIENCE]}),
        json!({"aud": []}),
        json!({"aud": [AUDIENCE, 5]}),
        json!({"aud": {"aud": AUDIENCE}}),
        json!({"aud": null}),
        json!({"aud": "https://other.example"}),
        json!({"sub": null, "client_id": "agent-7"}),
        json!({"sub": "", "client_id": "agent-7"}),
        json!({"sub": 5, "client_id": "agent-7"}),
        json!({"sub": null}),
        json!({"sub": ""}),
        json!({"scope": null, "scp": ["books:read", 1, "books:write"]}),
        json!({"scp": "a b"}),
        json!({"scp": {"a": 1}}),
        json!({"scope": 5}),
        json!({"org": "acme"}),
        json!({"org": ""}),
        json!({"org": ["acme"]}),
        json!({"x": {"deep": [[[{"er": null}]]]}}),
    ] {
        add(
            &changes.to_string(),
            rs256(&claims(issuer, &changes)),
            Must::Agree,
        );
    }
    // Claims as written: repeated, escaped, odd JSON.
    let exp = now + 300;
    for (name, payload) in [
        ("exp twice", format!(r#"{open},"exp":{exp}}}"#)),
        ("sub twice", format!(r#"{open},"sub":"reader-2"}}"#)),
        ("iss twice", format!(r#"{open},"iss":"{issuer}"}}"#)),
        ("aud twice", format!(r#"{open},"aud":"{AUDIENCE}"}}"#)),
        ("nbf twice", format!(r#"{open},"nbf":1,"nbf":2}}"#)),
        ("scope twice", format!(r#"{open},"scope":"books:write"}}"#)),
        (
            "client_id twice",
            format!(r#"{open},"client_id":"a","client_id":"b"}}"#),
        ),
        ("org twice", format!(r#"{open},"org":"a","org":"b"}}"#)),
        (
            "escaped sub twice",
            format!(r#"{open},"s\u0075b":"reader-2"}}"#),
        ),
        ("escaped org", format!(r#"{open},"\u006frg":"acme"}}"#)),
        ("escaped value", format!(r#"{open},"org":"\u0061cme\n"}}"#)),
        ("lone surrogate", format!(r#"{open},"x":"\ud800"}}"#)),
        ("surrogate pair", format!(r#"{open},"x":"\ud83d\ude00"}}"#)),
        ("number out of range", format!(r#"{open},"x":1e400}}"#)),
        ("control character", format!("{open},\"x\":\"a\u{1}b\"}}")),
        ("spaces around", format!(" \n{valid}\t ")),
        ("trailing text", format!("{valid} x")),
        ("two objects", format!("{valid}{valid}")),
        ("an array", format!("[{valid}]")),
        ("a string", r#""claims""#.to_owned()),
        ("unterminated", open.to_owned()),
        ("empty", String::new()),
    ] {
        add(name, rs256(&payload), Must::Agree);
    }
    let mut latin1 = valid.clone().into_bytes();
    latin1.splice(latin1.len() - 1..latin1.len() - 1, *b",\"x\":\"\xe9\"");
    add(
        "not UTF-8",
        jws(
            &jose_header("RS256", Some(RSA_KID)),
            &latin1,
            &keys.rsa,
            Algorithm::RS256,
        ),
        Must::Fail,
    );

    // Headers.
    let header = |fields: &str| format!(r#"{{"alg":"RS256","kid":"{RSA_KID}"{fields}}}"#);
    for (name, fields, must) in [
        ("typ at+jwt", r#","typ":"at+jwt""#, Must::Pass),
        (
            "crit b64 with b64 true",
            r#","crit":["b64"],"b64":true"#,
            Must::Agree,
        ),
        ("crit b64 without b64", r#","crit":["b64"]"#, Must::Fail),
        ("crit exp", r#","crit":["exp"],"b64":true"#, Must::Fail),
        ("crit empty", r#","crit":[]"#, Must::Fail),
        (
            "crit b64 twice",
            r#","crit":["b64","b64"],"b64":true"#,
            Must::Fail,
        ),
        ("b64 false", r#","b64":false"#, Must::Fail),
        ("b64 not a boolean", r#","b64":"yes""#, Must::Fail),
        ("typ a number", r#","typ":5"#, Must::Agree),
        (
            "jku elsewhere",
            r#","jku":"https://evil.example/jwks""#,
            Must::Agree,
        ),
        ("x5c not an array", r#","x5c":"cert""#, Must::Agree),
        ("kid twice", r#","kid":"ec-1""#, Must::Agree),
    ] {
        add(
            name,
            jws(
                &header(fields),
                valid.as_bytes(),
                &keys.rsa,
                Algorithm::RS256,
            ),
            must,
        );
    }
    // Keys and algorithms.
    let signed = |header: &str, key: &EncodingKey, algorithm: Algorithm| {
        jws(header, valid.as_bytes(), key, algorithm)
    };
    // Signed with `key` by `algorithm`, under the header of `alg` and `kid`.
    let by = |alg: &str, kid: Option<&str>, key: &EncodingKey, algorithm: Algorithm| {
        signed(&jose_header(alg, kid), key, algorithm)
    };
    let public_as_secret = EncodingKey::from_secret(RSA_PUBLIC.as_bytes()).unwrap();
    let modulus_as_secret = EncodingKey::from_secret(RSA_N.as_bytes()).unwrap();
    for (name, token, must) in [
        (
            "RS256 without kid",
            by("RS256", None, &keys.rsa, Algorithm::RS256),
            Must::Pass,
        ),
        (
            "RS256 with kid null",
            signed(r#"{"alg":"RS256","kid":null}"#, &keys.rsa, Algorithm::RS256),
            Must::Pass,
        ),
        (
            "ES256",
            by("ES256", Some(EC_KID), &keys.ec, Algorithm::ES256),
            Must::Pass,
        ),
        (
            "ES256 without kid",
            by("ES256", None, &keys.ec, Algorithm::ES256),
            Must::Pass,
        ),
        (
            "EdDSA",
            by("EdDSA", Some(ED_KID), &keys.ed, Algorithm::EdDSA),
            Must::Pass,
        ),
        (
            "EdDSA without kid",
            by("EdDSA", None, &keys.ed, Algorithm::EdDSA),
            Must::Pass,
        ),
        (
            "EdDSA by a stranger's key under the issuer's kid",
            by("EdDSA", Some(ED_KID), &keys.stranger, Algorithm::EdDSA),
            Must::Fail,
        ),
        (
            "EdDSA by a stranger's key without kid",
            by("EdDSA", None, &keys.stranger, Algorithm::EdDSA),
            Must::Fail,
        ),
        (
            "EdDSA by a stranger's key it embeds (jwk)",
            signed(
                &json!({"alg": "EdDSA", "kid": ED_KID, "jwk":
                    {"kty": "OKP", "crv": "Ed25519", "x": keys.stranger_x}})
                .to_string(),
                &keys.stranger,
                Algorithm::EdDSA,
            ),
            Must::Fail,
        ),
        (
            "RS256 under the EC key's kid",
            by("RS256", Some(EC_KID), &keys.rsa, Algorithm::RS256),
            Must::Fail,
        ),
        (
            "ES256 under the RSA key's kid",
            by("ES256", Some(RSA_KID), &keys.ec, Algorithm::ES256),
            Must::Fail,
        ),
        (
            "EdDSA under the EC key's kid",
            by("EdDSA", Some(EC_KID), &keys.ed, Algorithm::EdDSA),
            Must::Fail,
        ),
        (
            "HS256 with the RSA public key as secret",
            by("HS256", Some(RSA_KID), &public_as_secret, Algorithm::HS256),
            Must::Fail,
        ),
        (
            "HS256 with the modulus as secret",
            by("HS256", Some(RSA_KID), &modulus_as_secret, Algorithm::HS256),
            Must::Fail,
        ),
        (
            "RS384",
            by("RS384", Some(RSA_KID), &keys.rsa, Algorithm::RS384),
            Must::Fail,
        ),
        (
            "PS256",
            by("PS256", Some(RSA_KID), &keys.rsa, Algorithm::PS256),
            Must::Fail,
        ),
        (
            "alg none",
            format!(
                "{}.{}.",
                b64(jose_header("none", Some(RSA_KID)).as_bytes()),
                b64(valid.as_bytes())
            ),
            Must::Fail,
        ),
        (
            "alg in lower case",
            by("rs256", Some(RSA_KID), &keys.rsa, Algorithm::RS256),
            Must::Fail,
        ),
        (
            "no alg",
            signed(
                &format!(r#"{{"kid":"{RSA_KID}"}}"#),
                &keys.rsa,
                Algorithm::RS256,
            ),
            Must::Fail,
        ),
        (
            "unknown kid",
            by("RS256", Some("nobody"), &keys.rsa, Algorithm::RS256),
            Must::Fail,
        ),
        (
            "kid a number",
            signed(r#"{"alg":"RS256","kid":5}"#, &keys.rsa, Algorithm::RS256),
            Must::Fail,
        ),
    ] {
        add(name, token, must);
    }

    // Signatures and segments.
    let token = rs256(&valid);
    let (message, signature) = token.rsplit_once('.').unwrap();
    let (header_part, _) = message.split_once('.').unwrap();
    let raw = URL_SAFE_NO_PAD.decode(signature).unwrap();
    let mut flipped = raw.clone();
    flipped[100] ^= 1;
    // The last character of a 256-byte signature carries 2 bits and 4 zero bits.
    let mut loose = signature.to_owned();
    let last = loose.pop().unwrap();
    let alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    loose.push(alphabet.as_bytes()[alphabet.find(last).unwrap() | 1] as char);
    let other_payload = b64(claims(issuer, &json!({"scope": "books:write"})).as_bytes());
    for (name, token) in [
        ("tampered signature", format!("{message}.{}", b64(&flipped))),
        (
            "tampered payload",
            format!("{header_part}.{other_payload}.{signature}"),
        ),
        ("signature padded", format!("{token}==")),
        (
            "signature with non-zero trailing bits",
            format!("{message}.{loose}"),
        ),
        (
            "signature one byte short",
            format!("{message}.{}", b64(&raw[1..])),
        ),
        (
            "signature one byte long",
            format!("{message}.{}", b64(&[&raw[..], &[0]].concat())),
        ),
        (
            "signature 1 KiB and more",
            format!("{message}.{}", b64(&raw.repeat(5))),
        ),
        ("signature empty", format!("{message}.")),
        (
            "signature not base64url",
            format!("{message}.{}", "+/".repeat(171)),
        ),
        ("four segments", format!("{token}.{signature}")),
        ("two segments", message.to_owned()),
        ("header with a dot", format!("a.{token}")),
        ("not a JWT", "opaque-token".to_owned()),
    ] {
        add(name, token, Must::Fail);
    }
    cases
}

/// An API with one operation that any bearer of a valid token may call, showing the caller.
fn api(authenticator: JwtAuthenticator, issuer: &str) -> Router {
    let layer = HaloBuilder::from_openapi_json(json!({
        "openapi": "3.1.0",
        "info": {"title": "Who", "version": "1"},
        "components": {"securitySchemes": {"oauth": {"type": "oauth2", "flows": {
            "clientCredentials": {"tokenUrl": format!("{issuer}/token"), "scopes": {}}}}}},
        "paths": {"/who": {
            "get": {"operationId": "who", "security": [{"oauth": []}], "responses": {}}
        }}
    }))
    .authenticator(authenticator)
    .build()
    .unwrap();
    Router::new()
        .route(
            "/who",
            get(|caller: Principal| async move {
                Json(json!({"caller": caller.id(),
                    "scopes": caller.scopes().collect::<Vec<_>>(), "tenant": caller.tenant()}))
            }),
        )
        .layer(layer)
}

#[tokio::test]
async fn the_cold_path_takes_exactly_what_jsonwebtoken_takes() {
    let keys = keys();
    let set = keys.set.clone();
    let issuer_server = halo_tests::spawn(Router::new().route(
        "/jwks",
        get(move || {
            let set = set.clone();
            async move { Json(set) }
        }),
    ))
    .await;
    let issuer = issuer_server.base_url();
    let authenticator = JwtAuthenticator::builder(&issuer)
        .audience(AUDIENCE)
        .jwks_uri(issuer_server.url("/jwks"))
        .tenant_claim(TENANT_CLAIM)
        .cache_ttl(Duration::ZERO)
        .build()
        .await
        .unwrap();
    let server = halo_tests::spawn(api(authenticator, &issuer)).await;
    let client = reqwest::Client::new();
    let url = server.url("/who");

    let (mut passed, mut failed) = (0, 0);
    for (name, token, must) in cases(&keys, &issuer) {
        let expected = reference(&token, &keys, &issuer);
        match must {
            Must::Pass => assert!(expected.is_some(), "{name}: jsonwebtoken refuses it"),
            Must::Fail => assert!(expected.is_none(), "{name}: jsonwebtoken takes it"),
            Must::Agree => {}
        }
        // Twice: nothing is remembered between two checks of the same token.
        for _ in 0..2 {
            let answer = client.get(&url).bearer_auth(&token).send().await.unwrap();
            let status = answer.status();
            let challenge = answer
                .headers()
                .get(WWW_AUTHENTICATE)
                .map(|value| value.to_str().unwrap().to_owned());
            let body = answer.text().await.unwrap();
            match &expected {
                Some(caller) => {
                    assert_eq!(status, StatusCode::OK, "{name}: {body}");
                    let shown: Value = serde_json::from_str(&body).unwrap();
                    assert_eq!(&shown, caller, "{name}");
                }
                None => {
                    assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: {body}");
                    let challenge = challenge.unwrap_or_default();
                    assert!(
                        challenge.contains(r#"error="invalid_token""#),
                        "{name}: {challenge}"
                    );
                }
            }
        }
        if expected.is_some() {
            passed += 1;
        } else {
            failed += 1;
        }
    }
    // Both verdicts are well represented.
    assert!(
        passed >= 20 && failed >= 40,
        "{passed} taken, {failed} refused"
    );
}
