//! What clients and `halo lint` make of tools a server describes, and of a model's arguments:
//! tool definitions, the lint report and argument placement never panic and keep their
//! promises (unique, valid names; consistent counts; headers a request can carry).
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use halo_protocol::lint::{Level, Linter, Severity};
use halo_protocol::{ToolEntry, ToolSchema, place_arguments, tool_definitions};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    // The tools as JSON (`[[entry, schema], ...]`), then `0xFF`, then a model's arguments.
    let (tools, args) = match data.iter().position(|&b| b == 0xFF) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(tools) = serde_json::from_slice::<Vec<(ToolEntry, ToolSchema)>>(tools) else {
        return;
    };
    let args: Value = serde_json::from_slice(args).unwrap_or(Value::Null);

    let definitions = tool_definitions(&tools);
    assert_eq!(definitions.len(), tools.len());
    let mut names = std::collections::HashSet::new();
    for definition in &definitions {
        let name = &definition.name;
        assert!(
            (1..=64).contains(&name.len())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "invalid name {name:?}"
        );
        assert!(names.insert(name.clone()), "{name:?} given twice");
        assert_eq!(
            definition.input_schema.get("type"),
            Some(&Value::from("object"))
        );
        let _ = serde_json::to_string(&definition.openai_function());
    }

    let today = UNIX_EPOCH + Duration::from_secs(20_000 * 86_400);
    let report = Linter::new().at(today).check(&tools);
    assert_eq!(report.tools_checked, tools.len());
    assert_eq!(report.errors + report.warnings, report.findings.len());
    let errors = report
        .findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .count();
    assert_eq!(errors, report.errors);
    assert_eq!(report.has_errors(), errors > 0);
    assert_eq!(
        Linter::new().at(today).check(&tools),
        report,
        "not deterministic"
    );
    let strict = Linter::new().at(today).warnings(Level::Deny).check(&tools);
    assert_eq!(strict.warnings, 0);
    assert_eq!(strict.errors, report.errors + report.warnings);
    let _ = serde_json::to_string(&report);

    for (_, schema) in &tools {
        let Ok(placed) = place_arguments(
            &schema.call.url,
            &schema.call.method,
            Some(schema),
            args.clone(),
        ) else {
            continue;
        };
        for (name, value) in &placed.headers {
            assert!(
                http::HeaderName::try_from(name.as_str()).is_ok(),
                "{name:?}"
            );
            assert!(
                http::HeaderValue::try_from(value.as_str()).is_ok(),
                "{value:?}"
            );
        }
        // Values are encoded; the template's own text is the server's.
        let raw = |text: &str| text.bytes().any(|b| b.is_ascii_control() || b == b' ');
        assert!(
            raw(&schema.call.url) || !raw(&placed.target),
            "{:?} is not encoded",
            placed.target
        );
    }
});
