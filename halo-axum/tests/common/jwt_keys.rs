//! The issuer's keys that the JWT tests sign with, made for these tests only (`openssl
//! genpkey`), and their public halves as a key set (RFC 7517) publishes them.

use serde_json::{Value, json};

/// The issuer's RSA key...
pub const RSA_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQDG7jPvK6hM/6as
lEru1jntuObOG8ARRyJ0cZskSGOEzSqABts90IG5jBGL/zSftrivqJAy10/H0TY5
/+4/merdL7qb7e8jWhxDyIRgFx2xL1vZ/YonrbaOI0M9Wdd/XBlZRz03yH2GVaPs
2M8d7NANI4xy7MzxbQkS/qk4VXa91VhqG2aXNcK9E9TLBRckfK63lUQhx8xLATcD
7hw3dOfiVqAbTzv4Te5o3/EvQLJwfU2jCewGoGLAzg5hOEE1JelXOqVC2N7p9iUK
dfhsympR66C0ADZhGsjHpB8eeHOVmcRi9H9IiJNOZAspLacaScLHgp52yXQhPA5H
a6AdI33jAgMBAAECggEABnX5ENUBp9KLxsIgNuaVRg/By0Lid40wZMjFyaViOg9x
yGuwli7d77lJXpsgyekk0Wuvlz8f87TrRnH1+nHUy28/582P/T1xepAaIIbPq5AG
sytFX+mH6tDhX645zgSfPCOQrO2hignhA5G9FFM7JJoZdygSteqdJ1VHCLHZ4+tp
xFzs3fwkvy2ve3rM+/F+85HfrHTRhY1GA6JBZu2e8eBETnlSC71JxtXj1+MzmAp3
VyL41j8qo1x8OypH63U+mHJYdvPvb0Ed1Lnp2WFAyjRCDhmROC1Wd30WJL561ufA
QMx3e2ZMiig3nlJei1pl2iPwizIkU2ogsifuuXccQQKBgQDngawI1DGGUwOvqpL/
sXsbHtdcJ2sBf82QiFTHvp1pakkoeQU+pths3uyc6eD8F0LLB/DwIpRIOdwUJdaR
+taVcYFMGMrno7mnjkLHYEEhXC8Rm3jkB4KlQJ5nDstCQoyadHWucQ51xgfHb4gr
QF/K4ioClmgLN5MioA7d4H7FIwKBgQDb+jZUVMkYHQlj8wI+FmYTrc9/LlI1+N6r
fDpe2oASOV18mKblzDeQUUg4VZry4GhZKNx9dUahSgMqUqchss2bfyN/2yr3EjZY
lJX8g8YuvuL0cUZlcaRUQjhWewFAyxKOl/418mJebMl/vIjQndhDe4gIxFWuPjeM
57FTHg3QQQKBgBeWEYXwwH7z9DswgLuGRImV0dE0vuUvNS1VhnW3SOhViNCTy+H/
M6ub5rVx6pckc4yl6Xk9vKfDJVX0KPFEghpFryumlv2Uo7SbfNg9SUVx0+XSVjW9
QiU9+SV8z16X0yVlWhwErrl3DJHYHiJx85CDDE6pLj5+UgJEFl+qoJ/LAoGAQcZT
MGwZpQgpoqUq6n2wD/pMrO6gzlqX2hbPLUWQPeLBPVw3q0ag5ponShDuv+ixytcY
9rp2YAvNXn5QUxcvu2sMplJWSoI7lcj4AAU24QtauVSVhAey5y7VwaYN/d26ssBn
1qGfIDTPG064agiIfcUWK+jo5azc11kAAKZf4wECgYBSTAXpz17iiN7dhacYbyi5
ZRNjOJeeHcLn6AFhd6UIxN9Q8mu+B4BwQFl+AhmID20Itom5T39JjY3X2CiYGjMA
ahOJK9sFf0Jy6f7CRuvdOrPym4TjoEc9qJe2awPbo2Wgwl0Pzlh6m3hdNhYG7BJc
WCS1nu0c8d1D8ZqAmWPODA==
-----END PRIVATE KEY-----";
/// ... its public half (what an attacker has, and tries as an HMAC secret) ...
pub const RSA_PUBLIC: &str = "-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAxu4z7yuoTP+mrJRK7tY5
7bjmzhvAEUcidHGbJEhjhM0qgAbbPdCBuYwRi/80n7a4r6iQMtdPx9E2Of/uP5nq
3S+6m+3vI1ocQ8iEYBcdsS9b2f2KJ622jiNDPVnXf1wZWUc9N8h9hlWj7NjPHezQ
DSOMcuzM8W0JEv6pOFV2vdVYahtmlzXCvRPUywUXJHyut5VEIcfMSwE3A+4cN3Tn
4lagG087+E3uaN/xL0CycH1NownsBqBiwM4OYThBNSXpVzqlQtje6fYlCnX4bMpq
UeugtAA2YRrIx6QfHnhzlZnEYvR/SIiTTmQLKS2nGknCx4Kedsl0ITwOR2ugHSN9
4wIDAQAB
-----END PUBLIC KEY-----";
/// ... and its modulus, as the key set publishes it.
pub const RSA_N: &str = "xu4z7yuoTP-mrJRK7tY57bjmzhvAEUcidHGbJEhjhM0qgAbbPdCBuYwRi_80n7a4r6iQMtdPx9E2Of_uP5nq3S-6m-3vI1ocQ8iEYBcdsS9b2f2KJ622jiNDPVnXf1wZWUc9N8h9hlWj7NjPHezQDSOMcuzM8W0JEv6pOFV2vdVYahtmlzXCvRPUywUXJHyut5VEIcfMSwE3A-4cN3Tn4lagG087-E3uaN_xL0CycH1NownsBqBiwM4OYThBNSXpVzqlQtje6fYlCnX4bMpqUeugtAA2YRrIx6QfHnhzlZnEYvR_SIiTTmQLKS2nGknCx4Kedsl0ITwOR2ugHSN94w";
/// An EC P-256 key of the issuer, and its public coordinates.
pub const EC_PRIVATE: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgBGuRGVBzozUMGlVd
NVE8xIVak6nW/d6KBiKrO88iiLyhRANCAATDSx+oEW6FNckShki6BTf0GZ9QDtqo
mDHJRrnz9Dnqx6BOAECsB+2eghL90M/MHaD0r9ZqFWq48ZkS4GkbLVgp
-----END PRIVATE KEY-----";
pub const EC_X: &str = "w0sfqBFuhTXJEoZIugU39BmfUA7aqJgxyUa58_Q56sc";
pub const EC_Y: &str = "oE4AQKwH7Z6CEv3Qz8wdoPSv1moVarjxmRLgaRstWCk";

/// The public half of an RSA signing key for RS256 (`n` its modulus), under `kid`.
pub fn rsa_jwk(kid: &str, n: &str) -> Value {
    json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": n, "e": "AQAB"})
}

/// The public half of [`EC_PRIVATE`], under `kid`.
pub fn ec_jwk(kid: &str) -> Value {
    json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": EC_X, "y": EC_Y})
}
