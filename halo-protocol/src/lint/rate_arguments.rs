//! `unknown-rate-argument`: a rate limit per argument value (`limits.rates`, `per:
//! argument`, or an argument among the parts of `per: combined`) names an argument the tool
//! takes.

use super::{Rule, Tool};
use crate::Dimension;

impl Tool<'_> {
    pub(super) fn rate_arguments(&mut self) {
        let name = self.entry.name.clone();
        let Some(limits) = self.schema.limits.as_ref() else {
            return;
        };
        // Where each argument is named (its pointer), and its name.
        let mut unknown: Vec<(String, String)> = Vec::new();
        for (index, limit) in limits.rates.iter().enumerate() {
            let combined = matches!(limit.per(), Dimension::Combined(_));
            for (part, dimension) in limit.per().parts().iter().enumerate() {
                let Some(argument) = dimension.argument() else {
                    continue;
                };
                if self.schema.input.contains_key(argument) {
                    continue;
                }
                let pointer = if combined {
                    format!("/limits/rates/{index}/of/{part}/argument")
                } else {
                    format!("/limits/rates/{index}/argument")
                };
                unknown.push((pointer, argument.to_owned()));
            }
        }
        for (pointer, argument) in unknown {
            let message = format!(
                "`{name}`: a rate limit is counted per value of `{argument}`, an argument the tool \
                 does not take, so it never applies"
            );
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

    #[test]
    fn every_argument_of_a_combination_is_one_the_tool_takes() {
        assert_eq!(ids(&limited(&["3/minute per tenant and name"])), []);
        let found = limited(&["3/minute per tenant and name and colour"]);
        assert_eq!(ids(&found), [Rule::UnknownRateArgument]);
        assert_eq!(found[0].param.as_deref(), Some("colour"));
        assert_eq!(
            found[0].pointer.as_deref(),
            Some("/limits/rates/0/of/2/argument")
        );
    }
}
