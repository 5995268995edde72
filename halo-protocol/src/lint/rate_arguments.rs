//! `unknown-rate-argument`: a rate limit per argument value (`limits.rates`, `per:
//! argument`) names an argument the tool takes.

use super::{Rule, Tool};

impl Tool<'_> {
    pub(super) fn rate_arguments(&mut self) {
        let name = self.entry.name.clone();
        let Some(limits) = self.schema.limits.as_ref() else {
            return;
        };
        let unknown: Vec<(usize, String)> = limits
            .rates
            .iter()
            .enumerate()
            .filter_map(|(index, limit)| {
                let argument = limit.per().argument()?;
                (!self.schema.input.contains_key(argument)).then(|| (index, argument.to_owned()))
            })
            .collect();
        for (index, argument) in unknown {
            let message = format!(
                "`{name}`: a rate limit is counted per value of `{argument}`, an argument the tool \
                 does not take, so it never applies"
            );
            let pointer = format!("/limits/rates/{index}/argument");
            self.push_at(Rule::UnknownRateArgument, &pointer, message)
                .param = Some(argument);
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lint::Rule;
    use crate::lint::Severity;
    use crate::lint::fixtures::{ids, with_first};
    use crate::{Limit, Limits};

    fn limited(rates: &[&str]) -> Vec<crate::lint::Finding> {
        with_first(|_, schema| {
            schema.limits = Some(Limits {
                rates: rates
                    .iter()
                    .map(|text| text.parse::<Limit>().unwrap())
                    .collect(),
                ..Limits::default()
            });
        })
    }

    #[test]
    fn limits_per_argument_name_arguments_the_tool_takes() {
        // `create_pet` takes `name`.
        assert_eq!(
            ids(&limited(&["3/minute per name", "9/hour per tenant"])),
            []
        );
        let found = limited(&["9/hour per tool", "3/minute per colour"]);
        assert_eq!(ids(&found), [Rule::UnknownRateArgument]);
        assert_eq!(found[0].severity, Severity::Error);
        assert_eq!(found[0].param.as_deref(), Some("colour"));
        assert_eq!(
            found[0].pointer.as_deref(),
            Some("/limits/rates/1/argument")
        );
        assert!(
            found[0].message.contains("`colour`"),
            "{}",
            found[0].message
        );
    }
}
