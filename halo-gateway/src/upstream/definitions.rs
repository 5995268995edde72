//! Schemas that carry their own definitions (`$defs`), written into one OpenAPI document:
//! the definitions become its components, one per definition (a second, different
//! definition of a name gets `_2`), and the references point there. A HALO upstream's
//! schemas and an MCP server's tools' schemas come this way.

use std::collections::HashMap;

use serde_json::{Map, Value};

/// The definitions of every schema of one upstream, as components: one name per
/// definition (a second, different definition of a name gets `_2`).
#[derive(Default)]
pub(super) struct Definitions {
    pub(super) schemas: Map<String, Value>,
    /// Each component's definition as served, to tell the same from another.
    served: HashMap<String, Value>,
}

impl Definitions {
    /// Moves `schema`'s `$defs` into the components, and points its references (and theirs)
    /// there.
    pub(super) fn take(&mut self, schema: &mut Map<String, Value>) {
        let Some(Value::Object(defs)) = schema.remove("$defs") else {
            return;
        };
        let mut names = HashMap::new();
        for (name, body) in &defs {
            let mut chosen = name.clone();
            let mut n = 2;
            while let Some(known) = self.served.get(&chosen) {
                if known == body {
                    break;
                }
                chosen = format!("{name}_{n}");
                n += 1;
            }
            names.insert(name.clone(), chosen);
        }
        for (name, mut body) in defs {
            let chosen = names[&name].clone();
            if self.served.contains_key(&chosen) {
                continue;
            }
            self.served.insert(chosen.clone(), body.clone());
            point(&mut body, &names);
            self.schemas.insert(chosen, body);
        }
        let mut rest = Value::Object(std::mem::take(schema));
        point(&mut rest, &names);
        if let Value::Object(rest) = rest {
            *schema = rest;
        }
    }
}

/// Points `#/$defs/NAME` references in `value` at the components `names` gives.
fn point(value: &mut Value, names: &HashMap<String, String>) {
    crate::references::rewrite(value, &|reference| {
        let name = names.get(reference.strip_prefix("#/$defs/")?)?;
        Some(format!("#/components/schemas/{name}"))
    });
}
