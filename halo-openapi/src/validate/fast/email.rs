//! The plain shape of most email addresses, accepted without asking JSON Schema.

/// Whether `address` has the plain shape most addresses have, which every reading of
/// RFC 5321 accepts: a dot-atom local part of letters, digits and `._+-` (at most 64
/// characters, dots not first, last or doubled), `@`, and a domain of at least two labels of
/// letters, digits and inner hyphens (each at most 63 characters, the last starting with a
/// letter, at most 253 in all). `false` only means "not this shape".
pub(super) fn plain_email(address: &str) -> bool {
    let Some((local, domain)) = address.split_once('@') else {
        return false;
    };
    let local_fits = (1..=64).contains(&local.len())
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && local
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'+' | b'-'));
    let mut labels = 0;
    let domain_fits = domain.len() <= 253
        && domain.split('.').all(|label| {
            labels += 1;
            (1..=63).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        })
        && domain
            .rsplit('.')
            .next()
            .is_some_and(|last| last.starts_with(|c: char| c.is_ascii_alphabetic()));
    local_fits && domain_fits && labels >= 2
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn plain_addresses_are_ones_json_schema_accepts() {
        let full = jsonschema::options()
            .should_validate_formats(true)
            .build(&json!({"format": "email"}))
            .unwrap();
        let long_label = format!("a@{}.com", "b".repeat(63));
        let long_local = format!("{}@example.com", "a".repeat(64));
        for address in [
            "reader@example.com",
            "first.last+tag@mail.example.co.uk",
            "a_b-c@x1.io",
            "A@B-C.org",
            &long_label,
            &long_local,
        ] {
            assert!(plain_email(address), "{address}");
            assert!(full.is_valid(&json!(address)), "{address}");
        }
        let too_long_label = format!("a@{}.com", "b".repeat(64));
        let too_long_local = format!("{}@example.com", "a".repeat(65));
        for address in [
            "plain",
            "@example.com",
            "a@",
            "a@localhost",
            ".a@example.com",
            "a.@example.com",
            "a..b@example.com",
            "a@-x.com",
            "a@x-.com",
            "a@x..com",
            "a@example.123",
            "\"quoted\"@example.com",
            "a@[127.0.0.1]",
            "a@b@example.com",
            "ü@example.com",
            &too_long_label,
            &too_long_local,
        ] {
            assert!(!plain_email(address), "{address}");
        }
    }
}
