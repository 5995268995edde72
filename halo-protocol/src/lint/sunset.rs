//! `missing-sunset`, `invalid-sunset` and `past-sunset`: a deprecated or retired tool has a
//! sunset date, a sunset is a date, and a tool past its sunset is no longer listed.

use super::{Rule, Tool};
use crate::Status;
use crate::date::epoch_days;

impl Tool<'_> {
    pub(super) fn sunset(&mut self) {
        let name = self.entry.name.clone();
        let lifecycle = &self.schema.lifecycle;
        let status = match lifecycle.status {
            Some(Status::Deprecated) => Some("deprecated"),
            Some(Status::Sunset) => Some("retired"),
            _ => None,
        };
        let days = lifecycle.sunset.as_deref().map(epoch_days);
        match (status, &lifecycle.sunset, days) {
            (Some(status), None, _) => {
                let message = format!("`{name}` is {status} but has no sunset date");
                self.push_at(Rule::MissingSunset, "/sunset", message);
            }
            (_, Some(sunset), Some(None)) => {
                let message = format!("`{name}`: sunset `{sunset}` is not a date (YYYY-MM-DD)");
                self.push_at(Rule::InvalidSunset, "/sunset", message);
            }
            (_, Some(sunset), Some(Some(day))) if self.today.is_some_and(|today| day < today) => {
                let message =
                    format!("`{name}`: its sunset date, {sunset}, has passed, yet it is listed");
                self.push_at(Rule::PastSunset, "/sunset", message);
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use crate::lint::fixtures::{good, ids, rules};
    use crate::lint::{Finding, Linter, Rule, Severity};
    use crate::{Lifecycle, Status};

    fn deprecated(sunset: Option<&str>) -> Vec<Finding> {
        let mut tools = good();
        tools[1].1.lifecycle = Lifecycle {
            status: Some(Status::Deprecated),
            sunset: sunset.map(str::to_owned),
            replace_with: Some("/pets/{id}".into()),
        };
        // Day 20000 is 2024-10-04.
        Linter::new()
            .at(SystemTime::UNIX_EPOCH + Duration::from_secs(20_000 * 86_400 + 3_600))
            .check(&tools)
            .findings
    }

    #[test]
    fn deprecated_tools_have_a_sunset() {
        let found = deprecated(None);
        assert_eq!(ids(&found), [Rule::MissingSunset]);
        assert_eq!(
            found[0].severity,
            Severity::Warning,
            "a plain app has no date yet"
        );
        assert!(found[0].message.contains("deprecated"), "{found:?}");
        let found = deprecated(Some("next year"));
        assert_eq!(ids(&found), [Rule::InvalidSunset]);
        assert_eq!(found[0].severity, Severity::Error);
        assert!(found[0].message.contains("not a date"), "{found:?}");
        assert_eq!(ids(&deprecated(Some("2024-10-04"))), []);
        assert_eq!(ids(&deprecated(Some("2030-01-01"))), []);
        // Active tools need none.
        let mut tools = good();
        tools[1].1.lifecycle.status = Some(Status::Active);
        assert_eq!(rules(&tools), []);
    }

    #[test]
    fn past_sunsets() {
        let found = deprecated(Some("2024-10-03"));
        assert_eq!(ids(&found), [Rule::PastSunset]);
        assert_eq!(found[0].severity, Severity::Warning);
        assert!(found[0].message.contains("2024-10-03"), "{found:?}");
        // Without a date to compare with, the rule finds nothing.
        let mut tools = good();
        tools[1].1.lifecycle.sunset = Some("1999-01-01".into());
        assert_eq!(ids(&Linter::new().check(&tools).findings), []);
    }
}
