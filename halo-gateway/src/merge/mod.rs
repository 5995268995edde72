//! Every upstream's document merged into the one OpenAPI document the layer serves: each
//! operation under `/<upstream>` plus its path, named uniquely across upstreams, tagged with
//! its upstream, without the upstream's credentials among its inputs, and carrying what the
//! policies set on it.

mod apply;
mod credentials;
mod links;
mod refs;

use std::collections::HashMap;

use halo_openapi::Names;
use halo_protocol::UniqueNames;
use http::Method;
use serde_json::{Map, Value, json};

use self::refs::{Renames, SECTIONS};
use crate::error::{ConfigError, Error};
use crate::policy::{Candidate, Effective, Policies};

pub(crate) use self::apply::SCHEME;
pub(crate) use self::credentials::Credentials;

/// One upstream's part of the merge.
#[derive(Debug)]
pub(crate) struct Part<'a> {
    pub(crate) name: &'a str,
    pub(crate) prefix: bool,
    pub(crate) document: Value,
}

/// The merged document and what went into it.
#[derive(Debug)]
pub(crate) struct Merged {
    pub(crate) document: Value,
    /// Every operation of every upstream, served or left out by a policy.
    pub(crate) tools: Vec<Entry>,
    /// Where each upstream reads credentials, by upstream index.
    pub(crate) credentials: Vec<Credentials>,
}

/// An operation of an upstream, as the merge placed it.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub(crate) upstream: usize,
    /// The name its upstream gives it.
    pub(crate) given: String,
    /// The name the gateway serves it under.
    pub(crate) served: String,
    pub(crate) method: Method,
    /// The upstream's path key.
    pub(crate) path: String,
    pub(crate) effective: Effective,
}

impl Entry {
    /// Whether a policy left it out.
    pub(crate) fn excluded(&self) -> bool {
        self.effective.excluded()
    }
}

/// The path the gateway serves an upstream's path `key` at.
pub(crate) fn served_path(upstream: &str, key: &str) -> String {
    match key {
        "" | "/" => format!("/{upstream}"),
        _ if key.starts_with('/') => format!("/{upstream}{key}"),
        _ => format!("/{upstream}/{key}"),
    }
}

/// Merges the upstreams' documents (each OpenAPI 3.0 or 3.1) into one 3.1 document titled
/// `title`. `authenticated`: the gateway has an authenticator, and every tool requires a
/// caller.
pub(crate) fn merge(
    title: &str,
    parts: Vec<Part<'_>>,
    policies: &Policies,
    authenticated: bool,
) -> Result<Merged, Error> {
    let mut parts = parts;
    for part in &mut parts {
        halo_openapi::upgrade_to_3_1(&mut part.document);
    }
    let renames = {
        let documents: Vec<(&str, &Value)> = parts
            .iter()
            .map(|part| (part.name, &part.document))
            .collect();
        Renames::find(&documents)
    };
    let mut paths = Map::new();
    let mut components: Map<String, Value> = Map::new();
    let mut tags: Vec<Value> = Vec::new();
    let mut tools = Vec::new();
    let mut served_by: HashMap<String, usize> = HashMap::new();
    let mut credentials = Vec::with_capacity(parts.len());
    let upstream_names: Vec<String> = parts.iter().map(|p| p.name.to_owned()).collect();
    for (index, part) in parts.into_iter().enumerate() {
        let mut document = part.document;
        let found = Credentials::of(&document);
        renames.rewrite(index, part.name, &mut document);
        tags.push(json!({"name": part.name}));
        if let Some(Value::Array(own)) = document.get("tags") {
            for tag in own {
                let name = tag.get("name").and_then(Value::as_str);
                let known = tags
                    .iter()
                    .any(|t| t.get("name").and_then(Value::as_str) == name);
                if name.is_some() && !known {
                    tags.push(tag.clone());
                }
            }
        }
        let mut names = Names::default();
        let mut served_names = UniqueNames::new();
        // Read in place: only what is served is copied.
        let no_paths = Map::new();
        let items = match document.get("paths") {
            Some(Value::Object(items)) => items,
            _ => &no_paths,
        };
        for (key, item) in items {
            let Value::Object(mut served_item) = item.clone() else {
                continue;
            };
            for (method, _) in halo_openapi::operations(item) {
                served_item.remove(&method.to_ascii_lowercase());
            }
            let mut kept = 0;
            for (method, operation) in halo_openapi::operations(item) {
                let given = names.assign(
                    operation.get("operationId").and_then(Value::as_str),
                    method,
                    key,
                );
                // Prefixed names cut to 64 characters may meet: `_2`, as the upstream's own.
                let served = match part.prefix {
                    true => served_names.assign(&format!("{}_{given}", part.name)),
                    false => given.clone(),
                };
                // Its own tags, or the one the compiler derives from the path, as an upstream
                // registry would give it.
                let own_tags = halo_openapi::operation_tags(operation, template_of(key));
                let method = Method::from_bytes(method.as_bytes()).expect("a standard method");
                let effective = policies.effective(Candidate {
                    upstream: part.name,
                    id: operation.get("operationId").and_then(Value::as_str),
                    given: &given,
                    served: &served,
                    tags: &own_tags,
                    method: &method,
                });
                let entry = Entry {
                    upstream: index,
                    given,
                    served,
                    method,
                    path: key.clone(),
                    effective,
                };
                if entry.excluded() {
                    tools.push(entry);
                    continue;
                }
                if let Some(&other) = served_by.get(&entry.served) {
                    let other: &Entry = &tools[other];
                    return Err(Error::collision(format!(
                        "two tools would be served as `{}`: {} {} of `{}` and {} {} of `{}`; \
                         give one of the upstreams `prefix: true`, or leave one tool out with \
                         a policy (`set: {{ exclude: true }}`)",
                        entry.served,
                        other.method,
                        other.path,
                        upstream_names[other.upstream],
                        entry.method,
                        entry.path,
                        part.name
                    )));
                }
                let mut operation = operation.clone();
                if let Some(object) = operation.as_object_mut() {
                    object.insert(
                        "operationId".to_owned(),
                        Value::String(entry.served.clone()),
                    );
                    let mut with_upstream = vec![Value::String(part.name.to_owned())];
                    with_upstream.extend(
                        own_tags
                            .iter()
                            .filter(|tag| *tag != part.name)
                            .map(|tag| Value::String(tag.clone())),
                    );
                    object.insert("tags".to_owned(), Value::Array(with_upstream));
                    links::prefix(object, part.name);
                    apply::apply(&entry.effective, object, authenticated);
                }
                found.strip(&mut operation, &document);
                served_item.insert(method_key(&entry.method), operation);
                served_by.insert(entry.served.clone(), tools.len());
                tools.push(entry);
                kept += 1;
            }
            if kept == 0 {
                continue;
            }
            let mut served_item = Value::Object(served_item);
            found.strip(&mut served_item, &document);
            paths.insert(served_path(part.name, key), served_item);
        }
        // The document is done with: its components move, not copied.
        for section in SECTIONS {
            let Some(Value::Object(entries)) = document
                .pointer_mut(&format!("/components/{section}"))
                .map(Value::take)
            else {
                continue;
            };
            let target = components
                .entry(section.to_owned())
                .or_insert_with(|| Value::Object(Map::new()));
            for (name, value) in entries {
                let new = renames.name(index, section, &name).to_owned();
                target[new] = value;
            }
        }
        credentials.push(found);
    }
    shared_budgets(&tools)?;
    if authenticated {
        components.insert(
            "securitySchemes".to_owned(),
            json!({ SCHEME: {"type": "http", "scheme": "bearer"} }),
        );
    }
    let document = json!({
        "openapi": "3.1.0",
        "info": {"title": title, "version": "1"},
        "tags": tags,
        "paths": paths,
        "components": components,
    });
    Ok(Merged {
        document,
        tools,
        credentials,
    })
}

/// Refuses a limit the policies count across tools (a Harness key that names no tool) once
/// it applies to more than one served tool: the layer counts each tool's calls apart.
fn shared_budgets(tools: &[Entry]) -> Result<(), Error> {
    let mut users: HashMap<&str, Vec<&str>> = HashMap::new();
    for entry in tools.iter().filter(|entry| !entry.excluded()) {
        for limit in &entry.effective.pooled {
            users.entry(limit).or_default().push(&entry.served);
        }
    }
    let mut shared: Vec<(&str, Vec<&str>)> =
        users.into_iter().filter(|(_, t)| t.len() > 1).collect();
    shared.sort_unstable();
    let Some((limit, tools)) = shared.into_iter().next() else {
        return Ok(());
    };
    Err(Error::from(ConfigError::invalid(format!(
        "{limit} is one budget for every tool its policy applies to ({} and {} more), and the \
         gateway counts each tool's calls apart: name the tool in its key (`{{tool_name}}`, \
         or the `tenant_tool`/`agent_tool` dimensions), or give it a policy of its own",
        tools[0],
        tools.len() - 1
    ))))
}

/// The path template of a path key: without its `#fragment`.
fn template_of(key: &str) -> &str {
    key.split_once('#').map_or(key, |(template, _)| template)
}

/// The operation key of a method (`get`, `post`, ...).
fn method_key(method: &Method) -> String {
    method.as_str().to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(yaml: &str) -> Policies {
        let value = crate::read::parse(yaml).unwrap();
        Policies::Rules(
            crate::policy::Rules::compile(&serde_json::from_value::<Vec<_>>(value).unwrap())
                .unwrap(),
        )
    }

    fn pets(server: &str) -> Value {
        json!({
            "openapi": "3.0.3",
            "info": {"title": "Pets", "version": "1"},
            "servers": [{"url": server}],
            "tags": [{"name": "pets", "description": "Pets"}],
            "paths": {
                "/pets": {
                    "parameters": [{"name": "api_key", "in": "query"}],
                    "get": {"operationId": "listPets", "tags": ["pets"],
                            "parameters": [{"$ref": "#/components/parameters/Limit"}],
                            "responses": {"200": {"description": "ok",
                                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}}},
                    "post": {"operationId": "createPet", "security": [{"key": []}],
                             "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
                             "responses": {"201": {"description": "made"}}}
                },
                "/": {"get": {"responses": {"200": {"description": "root"}}}}
            },
            "components": {
                "securitySchemes": {"key": {"type": "apiKey", "in": "query", "name": "api_key"}},
                "schemas": {"Pet": {"type": "object", "properties": {"name": {"type": "string", "nullable": true}}}},
                "parameters": {"Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}}
            }
        })
    }

    fn harness(yaml: &str) -> Policies {
        let value = crate::read::parse(yaml).unwrap();
        let root = serde_json::from_value(value).unwrap();
        Policies::Harness(crate::policy::Harness::compile(&root, "policies").unwrap())
    }

    #[test]
    fn a_harness_budget_across_tools_is_refused_and_its_callers_written() {
        let zoo = || {
            vec![Part {
                name: "zoo",
                prefix: true,
                document: pets("http://zoo"),
            }]
        };
        // One tool: the budget the key makes is that tool's.
        let one = harness(
            r#"
tool_harness:
  policies:
    - { server_id: zoo, tool_name: createPet, allowed_agents: [keeper], denied_agents: [intern],
        rate_limits: [{ dimension: tenant, capacity: 5, refill_rate: 1 }] }
"#,
        );
        let merged = merge("gw", zoo(), &one, true).unwrap();
        let create = &merged.document["paths"]["/zoo/pets"]["post"];
        assert_eq!(
            create["x-halo-callers"],
            json!({"allow": ["keeper"], "deny": ["intern"]})
        );
        assert_eq!(
            create["x-halo-limits"]["rates"],
            json!([{"rate": "5/5 seconds", "per": "tenant"}])
        );
        assert!(
            merged.document["paths"]["/zoo/pets"].get("get").is_none(),
            "no policy"
        );
        // Every tool: one budget the layer cannot share.
        let every = harness(
            "tool_harness: { global_tool_policy: { rate_limits: [{ dimension: custom, key_template: 'tenant:{tenant_id}', capacity: 5, refill_rate: 1 }] } }",
        );
        let error = merge("gw", zoo(), &every, true).unwrap_err().to_string();
        assert!(
            error.contains("global_tool_policy.rate_limits[0]") && error.contains("{tool_name}"),
            "{error}"
        );
    }

    #[test]
    fn upstreams_are_placed_named_tagged_and_governed() {
        let rules = rules(
            r#"
- match: { upstream: "*" }
  set: { timeout: 5s }
- match: { upstream: zoo, methods: [POST] }
  set: { rate: 10/minute, visible_to: { scopes: [admin] } }
- match: { upstream: farm, tools: listPets }
  set: { exclude: true }
"#,
        );
        let parts = vec![
            Part {
                name: "zoo",
                prefix: true,
                document: pets("http://zoo"),
            },
            Part {
                name: "farm",
                prefix: true,
                document: pets("http://farm"),
            },
        ];
        let merged = merge("gw", parts, &rules, true).unwrap();
        let doc = &merged.document;
        assert_eq!(doc["openapi"], "3.1.0");
        let create = &doc["paths"]["/zoo/pets"]["post"];
        assert_eq!(create["operationId"], "zoo_createPet");
        assert_eq!(create["tags"], json!(["zoo", "pets"]));
        assert_eq!(create["security"], json!([{"gateway": ["admin"]}]));
        assert_eq!(create["x-halo-limits"]["rate"], "10/minute");
        assert_eq!(create["x-halo-resilience"]["timeout_ms"], 5000);
        assert_eq!(
            create["requestBody"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/zoo.Pet"
        );
        // The upstream's key is neither a path parameter nor a scheme of the gateway's.
        assert_eq!(doc["paths"]["/zoo/pets"]["parameters"], json!([]));
        assert_eq!(
            doc["components"]["securitySchemes"],
            json!({"gateway": {"type": "http", "scheme": "bearer"}})
        );
        // 3.0's nullable, said as 3.1 does.
        assert_eq!(
            doc["components"]["schemas"]["farm.Pet"]["properties"]["name"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(doc["paths"]["/zoo"]["get"]["operationId"], "zoo_get");
        assert_eq!(
            doc["paths"]["/zoo/pets"]["get"]["security"],
            json!([{"gateway": []}])
        );
        // Left out by a policy: not in the document, but listed.
        assert!(doc["paths"]["/farm/pets"].get("get").is_none());
        assert!(
            merged
                .tools
                .iter()
                .any(|t| t.served == "farm_listPets" && t.excluded())
        );
        assert_eq!(merged.tools.iter().filter(|t| !t.excluded()).count(), 5);
        assert_eq!(merged.credentials[0].query, ["api_key"]);
        assert_eq!(doc["tags"][0], json!({"name": "zoo"}));
        assert_eq!(doc["tags"][1]["name"], "pets");
    }

    #[test]
    fn unprefixed_names_that_collide_are_an_error() {
        let parts = vec![
            Part {
                name: "a",
                prefix: false,
                document: pets("http://a"),
            },
            Part {
                name: "b",
                prefix: false,
                document: pets("http://b"),
            },
        ];
        let error = merge("gw", parts, &Policies::default(), false).unwrap_err();
        assert!(error.is_collision(), "{error}");
        assert!(
            error.to_string().contains("GET / of `a` and GET / of `b`"),
            "{error}"
        );
    }
}
