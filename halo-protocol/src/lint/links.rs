//! `unknown-link`: `undo`, `replace_with`, `fallback` and `next` name paths of listed tools.

use super::{Rule, Tool};

impl Tool<'_> {
    pub(super) fn links(&mut self) {
        let schema = self.schema;
        let mut links: Vec<(String, &str, &str)> = Vec::new();
        if let Some(undo) = schema.effects.as_ref().and_then(|e| e.undo.as_deref()) {
            links.push(("/effects/undo".into(), "undo", undo));
        }
        if let Some(replacement) = schema.lifecycle.replace_with.as_deref() {
            links.push(("/replace_with".into(), "replace_with", replacement));
        }
        if let Some(fallback) = schema
            .resilience
            .as_ref()
            .and_then(|r| r.fallback.as_deref())
        {
            links.push(("/resilience/fallback".into(), "fallback", fallback));
        }
        for (index, next) in schema.next.iter().enumerate() {
            links.push((format!("/next/{index}/suggest"), "next", &next.suggest));
        }
        let name = self.entry.name.clone();
        for (pointer, field, link) in links {
            if self.resolves(link) {
                continue;
            }
            let message = format!(
                "`{name}`: {field} `{link}` names no tool listed here (it may be hidden from \
                 these credentials)"
            );
            self.push_at(Rule::UnknownLink, &pointer, message);
        }
    }

    /// Whether a link names a listed tool; absolute URLs and other hosts are not checked.
    fn resolves(&self, link: &str) -> bool {
        let Some((method, path)) = crate::link_target(link) else {
            return true;
        };
        self.listed.iter().any(|entry| {
            same_path(&entry.url, path)
                && method.is_none_or(|method| entry.method.eq_ignore_ascii_case(method))
        })
    }
}

/// Whether two paths name the same template: segment by segment, a `{variable}` on either
/// side matches anything.
fn same_path(template: &str, path: &str) -> bool {
    let is_var = |s: &str| s.starts_with('{') && s.ends_with('}');
    let mut a = template.trim_end_matches('/').split('/');
    let mut b = path.trim_end_matches('/').split('/');
    loop {
        match (a.next(), b.next()) {
            (None, None) => return true,
            (Some(a), Some(b)) if a == b || is_var(a) || is_var(b) => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lint::fixtures::{good, ids};
    use crate::lint::{Linter, Rule};
    use crate::{Next, Resilience, ToolSchema};

    #[test]
    fn links_name_listed_tools() {
        let linked = |change: fn(&mut ToolSchema)| {
            let mut tools = good();
            change(&mut tools[0].1);
            Linter::new().check(&tools).findings
        };
        // Templates match whatever their variables are called, and concrete paths.
        assert_eq!(
            ids(&linked(|s| {
                s.effects.as_mut().unwrap().undo = Some("/pets/{pet_id}?soft=1".into());
                s.next = vec![Next::new("201", "GET /pets/7")];
                s.resilience = Some(Resilience {
                    fallback: Some("https://other.example/pets".into()),
                    ..Resilience::default()
                });
            })),
            []
        );
        let found = linked(|s| {
            s.effects.as_mut().unwrap().undo = Some("PATCH /pets/{id}".into());
            s.next = vec![Next::new("201", "/owners/{id}")];
            s.lifecycle.replace_with = Some("/pets/{id}/v2".into());
            s.resilience = Some(Resilience {
                fallback: Some("/pets/".into()),
                ..Resilience::default()
            });
        });
        let pointers: Vec<&str> = found.iter().filter_map(|f| f.pointer.as_deref()).collect();
        assert_eq!(
            pointers,
            ["/effects/undo", "/replace_with", "/next/0/suggest"]
        );
        assert!(found.iter().all(|f| f.rule == Rule::UnknownLink));
        assert!(
            found[0].message.contains("undo `PATCH /pets/{id}`"),
            "{found:?}"
        );
    }
}
