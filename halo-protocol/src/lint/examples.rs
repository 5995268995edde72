//! `missing-example` and `example-mismatch`: a write has an example, and every example
//! passes the arguments the tool takes.

use super::{Rule, Tool};
use crate::escape_token;

impl Tool<'_> {
    pub(super) fn examples(&mut self) {
        let name = self.entry.name.clone();
        if self.is_write() && self.schema.examples.is_empty() {
            let message = format!("`{name}` changes state but has no example");
            self.push_at(Rule::MissingExample, "/examples", message);
        }
        let mut mismatches = Vec::new();
        for (index, example) in self.schema.examples.iter().enumerate() {
            for param in example.input.keys() {
                if !self.schema.input.contains_key(param) {
                    mismatches.push((
                        format!("/examples/{index}/input/{}", escape_token(param)),
                        param.clone(),
                        format!(
                            "`{name}`: example {index} passes `{param}`, which it does not take"
                        ),
                    ));
                }
            }
            for (param, field) in &self.schema.input {
                if field.required && !example.input.contains_key(param) {
                    mismatches.push((
                        format!("/examples/{index}/input"),
                        param.clone(),
                        format!(
                            "`{name}`: example {index} leaves out `{param}`, which is required"
                        ),
                    ));
                }
            }
        }
        for (pointer, param, message) in mismatches {
            self.push_at(Rule::ExampleMismatch, &pointer, message).param = Some(param);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::lint::fixtures::{good, ids, rules, with_first};
    use crate::lint::{Rule, Severity};
    use crate::{Example, InputField};

    #[test]
    fn writes_need_examples() {
        let found = with_first(|_, schema| schema.examples.clear());
        assert_eq!(ids(&found), [Rule::MissingExample]);
        assert_eq!(found[0].severity, Severity::Warning);
        // A read needs none.
        let mut tools = good();
        tools[1].1.examples.clear();
        assert_eq!(rules(&tools), []);
        // An untagged POST counts as a write.
        let found = with_first(|entry, schema| {
            entry.tags = vec!["pets".into()];
            schema.examples.clear();
        });
        assert_eq!(ids(&found), [Rule::ReadWriteTag, Rule::MissingExample]);
    }

    #[test]
    fn examples_match_the_inputs() {
        let found = with_first(|_, schema| {
            schema.examples.push(Example::new(
                json!({"nam": "Rex"}).as_object().unwrap().clone(),
                None,
            ));
        });
        assert_eq!(ids(&found), [Rule::ExampleMismatch, Rule::ExampleMismatch]);
        assert_eq!(found[0].pointer.as_deref(), Some("/examples/1/input/nam"));
        assert_eq!(found[0].param.as_deref(), Some("nam"));
        assert!(found[0].message.contains("does not take"), "{found:?}");
        assert_eq!(found[1].param.as_deref(), Some("name"));
        assert!(found[1].message.contains("leaves out `name`"), "{found:?}");
        // Optional arguments may be left out.
        let found = with_first(|_, schema| {
            schema.input.insert(
                "color".into(),
                InputField::new(json!({"type": "string", "description": "Fur"})),
            );
        });
        assert_eq!(ids(&found), []);
    }
}
