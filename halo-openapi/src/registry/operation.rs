//! One OpenAPI operation → one HALO tool (manifest entry + schema).

use halo_protocol::{Call, Lifecycle, Limits, Metadata, Status, ToolEntry, ToolSchema};
use serde_json::Value;

use super::bundle::{Bundler, Direction, Problem, Root};
use super::{auth, input};
use crate::BuildError;
use crate::validate::BodySpec;

/// What the walk knows about one operation before it becomes a tool.
#[derive(Debug)]
pub(crate) struct Source<'a> {
    /// The path key as the document writes it, `#fragment` included.
    pub(crate) key: &'a str,
    /// The path template: the key without its fragment.
    pub(crate) template: &'a str,
    pub(crate) method: &'static str,
    pub(crate) path_item: &'a Value,
    pub(crate) operation: &'a Value,
}

impl<'a> Source<'a> {
    /// `GET /api/books/{id} (get_book)`, for error messages.
    pub(crate) fn label(&self) -> String {
        match self.operation_id() {
            Some(id) => format!("{} {} ({id})", self.method, self.key),
            None => format!("{} {}", self.method, self.key),
        }
    }

    pub(crate) fn operation_id(&self) -> Option<&'a str> {
        self.operation.get("operationId").and_then(Value::as_str)
    }

    fn text(&self, key: &str) -> Option<&str> {
        self.operation
            .get(key)
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|text| !text.is_empty())
    }

    /// The metadata written as `x-halo-*` extensions on the operation.
    pub(crate) fn metadata(&self) -> Result<Metadata, BuildError> {
        let extensions = self.operation.as_object().into_iter().flatten();
        Metadata::from_extensions(extensions.map(|(key, value)| (key.as_str(), value)))
            .map_err(|source| BuildError::metadata(&self.label(), source))
    }
}

/// An operation as a tool: its manifest entry, its schema, and what its body must be.
#[derive(Debug)]
pub(crate) struct Built {
    pub(crate) entry: ToolEntry,
    pub(crate) schema: ToolSchema,
    pub(crate) body: Option<BodySpec>,
    /// Whether a successful answer of the operation is the application's own event stream
    /// (`text/event-stream`): such a call is never run as a tool stream.
    pub(crate) own_stream: bool,
    /// In a lenient build, what was wrong and has been repaired, each in the words of the
    /// error a strict build fails with, followed by what was done.
    pub(crate) repairs: Vec<String>,
}

/// Builds the manifest entry and the schema of an operation; `security` is the document's
/// security schemes and default requirement. `lenient`: what can be repaired is (see
/// [`Built::repairs`]).
pub(crate) fn build<'d>(
    source: &Source<'d>,
    name: String,
    meta: Metadata,
    bundler: &Bundler<'d>,
    (security_schemes, default_security): (Option<&Value>, Option<&Value>),
    lenient: bool,
) -> Result<Built, BuildError> {
    let unresolved = |problem: Problem| problem.into_error(&source.label());
    let (summary, description) = texts(source);
    let tags = tags(source);

    let mut schema = ToolSchema::new(Call::new(source.method, source.template));
    schema.description = description;
    schema.auth = auth::derive(
        source.operation.get("security").or(default_security),
        security_schemes,
    );
    let (mut input, body) =
        input::derive(bundler, source.path_item, source.operation).map_err(unresolved)?;
    let repairs = check_path_parameters(source, &mut input, lenient)?;
    schema.input = input;
    schema.output = match output_root(source, bundler).map_err(unresolved)? {
        Some(root) => {
            let schema = bundler
                .schema(root, Root::Reference, Direction::Output)
                .map_err(unresolved)?;
            let empty = schema.as_object().is_some_and(serde_json::Map::is_empty);
            (!empty).then_some(schema)
        }
        None => None,
    };
    schema.why = meta.why;
    schema.tags.clone_from(&tags);
    schema.effects = meta.effects;
    schema.limits = Some(limits(meta.limits, source.method));
    schema.next = meta.next;
    schema.examples = meta.examples;
    schema.resilience = meta.resilience;
    schema.trust = meta.trust;
    schema.observe = meta.observe;
    schema.lifecycle = lifecycle(meta.lifecycle, source);
    // A HALO stream declared (`stream`, or a hosted agent's run) is the layer's to serve;
    // otherwise an event stream the operation answers with is the application's own.
    let declared = meta.stream.is_some() || meta.kind == Some(halo_protocol::ToolKind::Agent);
    let own_stream = !declared && answers_event_stream(source, bundler).map_err(unresolved)?;
    schema.stream = meta.stream;

    let mut entry = ToolEntry::new(source.template, source.method, name, summary).with_tags(tags);
    entry.kind = meta.kind;
    Ok(Built {
        entry,
        schema,
        body,
        own_stream,
        repairs,
    })
}

/// Every path parameter is a variable of the template and every variable a path parameter:
/// a document that says otherwise would have the layer enforce arguments the API does not
/// take (or leave one it needs undescribed), so it fails at start-up, saying how to fix it.
/// The operation's tags; for an operation the document gives none, one derived from its
/// path's resource: the first literal segment that is not a version or `api`
/// (`/v1/customers/{customer}/sources` → `customers`, `/2010-04-01/Accounts/{Sid}.json` →
/// `accounts`), so that tag filters work on untagged documents such as Stripe's.
fn tags(source: &Source<'_>) -> Vec<String> {
    operation_tags(source.operation, source.template)
}

/// The tags a tool of `operation` (at the path template `template`) gets: the operation's
/// own, or, when it has none, one derived from the path's resource (the first literal
/// segment that is not a version or `api`), so that tag filters work on untagged documents
/// such as Stripe's.
///
/// ```
/// use serde_json::json;
///
/// let tagged = json!({"tags": ["issues"]});
/// assert_eq!(halo_openapi::operation_tags(&tagged, "/repos/{owner}/{repo}/issues"), ["issues"]);
/// let untagged = json!({});
/// assert_eq!(halo_openapi::operation_tags(&untagged, "/v1/customers/{customer}"), ["customers"]);
/// ```
#[must_use]
pub fn operation_tags(operation: &Value, template: &str) -> Vec<String> {
    let own: Vec<String> = operation
        .get("tags")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    if !own.is_empty() {
        return own;
    }
    resource_tag(template).into_iter().collect()
}

/// The resource a path template names, lower-cased: see [`tags`].
fn resource_tag(template: &str) -> Option<String> {
    template
        .split('/')
        .map(|segment| segment.split(['{', '.']).next().unwrap_or_default())
        .find(|segment| !segment.is_empty() && !is_version(segment) && *segment != "api")
        .map(str::to_ascii_lowercase)
}

/// `v1`, `v2beta1`, `2010-04-01`, `1.0`: a segment that versions the API, not a resource.
fn is_version(segment: &str) -> bool {
    let bytes = segment.as_bytes();
    let numbered = |rest: &[u8]| rest.first().is_some_and(u8::is_ascii_digit);
    segment
        .bytes()
        .all(|b| b.is_ascii_digit() || b == b'-' || b == b'.')
        || (matches!(bytes.first(), Some(b'v' | b'V')) && numbered(&bytes[1..]))
}

fn check_path_parameters(
    source: &Source<'_>,
    input: &mut indexmap::IndexMap<String, halo_protocol::InputField>,
    lenient: bool,
) -> Result<Vec<String>, BuildError> {
    let variables: Vec<&str> = halo_protocol::template_variables(source.template).collect();
    let is_path =
        |field: &halo_protocol::InputField| field.location == Some(halo_protocol::Location::Path);
    for (name, _) in input.iter().filter(|(_, field)| is_path(field)) {
        if !variables.contains(&name.as_str()) {
            return Err(BuildError::parameter(
                &source.label(),
                format!(
                    "parameter `{name}` is declared `in: path` but `{{{name}}}` is not in the \
                     template; if it is a query parameter, declare it so (utoipa: \
                     `#[into_params(parameter_in = Query)]` on its struct, or utoipa's \
                     `axum_extras` feature, which reads `Query<T>` and `Path<T>` extractors)"
                ),
            ));
        }
    }
    let mut repairs = Vec::new();
    for variable in variables {
        if input.get(variable).is_some_and(is_path) {
            continue;
        }
        let error = BuildError::parameter(
            &source.label(),
            format!(
                "the template's `{{{variable}}}` is not declared as a path parameter; declare it \
                 (utoipa: `params((\"{variable}\" = String, Path, description = \"…\"))`), or, \
                 if agents should not call this operation (a fallback, say), leave it out: \
                 `x-halo-exclude: true` on the operation, or `exclude_operation`/`exclude_path` \
                 on the builder"
            ),
        );
        // Declared as the string it is in the path, unless an argument of another kind
        // already has its name: then which one the template means is not obvious.
        if !lenient || input.contains_key(variable) {
            return Err(error);
        }
        let field = halo_protocol::InputField::new(serde_json::json!({"type": "string"}))
            .located(halo_protocol::Location::Path)
            .required(true);
        let at = input.values().filter(|field| is_path(field)).count();
        input.shift_insert(at, variable.to_owned(), field);
        repairs.push(format!(
            "{error}; declared as a required string path parameter"
        ));
    }
    Ok(repairs)
}

/// The short text for the manifest and the full text for the schema: the summary (the doc
/// comment's first line) and description together, or whichever exists.
fn texts(source: &Source<'_>) -> (String, String) {
    match (source.text("summary"), source.text("description")) {
        (Some(summary), Some(description)) if description.starts_with(summary) => {
            (summary.to_owned(), description.to_owned())
        }
        (Some(summary), Some(description)) => {
            (summary.to_owned(), format!("{summary}\n\n{description}"))
        }
        (Some(text), None) => (text.to_owned(), text.to_owned()),
        (None, Some(text)) => (first_line(text).to_owned(), text.to_owned()),
        (None, None) => (String::new(), String::new()),
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}

/// `idempotent` defaults from the method ([`halo_protocol::is_idempotent_method`]): of the
/// operations OpenAPI describes, all but POST and PATCH are.
///
/// A `POST` or `PATCH` declared `idempotent` is made so by a key: it advertises the
/// `Idempotency-Key` header (which the layer then enforces) unless it names another.
fn limits(declared: Option<Limits>, method: &str) -> Limits {
    let mut limits = declared.unwrap_or_default();
    let idempotent_method = halo_protocol::is_idempotent_method(method);
    if !idempotent_method && limits.idempotent == Some(true) && limits.idempotency_key.is_none() {
        limits.idempotency_key = Some("Idempotency-Key".to_owned());
    }
    if limits.idempotent.is_none() {
        limits.idempotent = Some(idempotent_method);
    }
    limits
}

/// A deprecated operation without a declared status is `deprecated`.
fn lifecycle(declared: Option<Lifecycle>, source: &Source<'_>) -> Lifecycle {
    let mut lifecycle = declared.unwrap_or_default();
    let deprecated = source.operation.get("deprecated").and_then(Value::as_bool) == Some(true);
    if deprecated && lifecycle.status.is_none() {
        lifecycle.status = Some(Status::Deprecated);
    }
    lifecycle
}

/// The schema of the first successful JSON response, as the document writes it.
fn output_root<'d>(
    source: &Source<'d>,
    bundler: &Bundler<'d>,
) -> Result<Option<&'d Value>, Problem> {
    let Some(responses) = source.operation.get("responses").and_then(Value::as_object) else {
        return Ok(None);
    };
    let mut successes: Vec<(&String, &Value)> = responses
        .iter()
        .filter(|(status, _)| status.starts_with('2'))
        .collect();
    successes.sort_by(|a, b| a.0.cmp(b.0));
    for (_, response) in successes {
        let response = bundler.follow(response)?;
        if let Some((_, content)) = input::json_content(response.get("content")) {
            return input::content_root(bundler, content);
        }
    }
    Ok(None)
}

/// Whether a successful response of the operation is `text/event-stream`: unless it declares
/// a HALO stream, the application streams it itself (an SSE route), and the layer passes it
/// through rather than running it as a tool stream.
fn answers_event_stream<'d>(source: &Source<'d>, bundler: &Bundler<'d>) -> Result<bool, Problem> {
    let Some(responses) = source.operation.get("responses").and_then(Value::as_object) else {
        return Ok(false);
    };
    for (status, response) in responses {
        if !status.starts_with('2') {
            continue;
        }
        let content = bundler
            .follow(response)?
            .get("content")
            .and_then(Value::as_object);
        if content.into_iter().flatten().any(|(media_type, _)| {
            halo_protocol::essence(media_type).eq_ignore_ascii_case(halo_protocol::EVENT_STREAM)
        }) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Counts the references of every schema [`build`] will bundle for the operation.
pub(crate) fn survey<'d>(source: &Source<'d>, bundler: &Bundler<'d>) -> Result<(), BuildError> {
    let unresolved = |problem: Problem| problem.into_error(&source.label());
    let mut roots = Vec::new();
    input::roots(bundler, source.path_item, source.operation, &mut roots).map_err(unresolved)?;
    roots.extend(output_root(source, bundler).map_err(unresolved)?);
    for root in roots {
        bundler.survey(root).map_err(unresolved)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resources_of_paths() {
        for (template, tag) in [
            ("/v1/customers/{customer}/sources", Some("customers")),
            ("/2010-04-01/Accounts/{Sid}.json", Some("accounts")),
            ("/api/books/{id}", Some("books")),
            ("/v2beta1/projects", Some("projects")),
            ("/{tenant}/orders", Some("orders")),
            ("/v1", None),
            ("/", None),
            ("/{id}", None),
            ("/vacations", Some("vacations")),
            ("/1.0/health", Some("health")),
        ] {
            assert_eq!(resource_tag(template).as_deref(), tag, "{template}");
        }
    }
}
