//! One walk of the document: every operation made a tool, every answer pre-serialised. An
//! operation that cannot be served fails the walk, or, in a lenient build, is left out and
//! recorded ([`Record`]).

use std::collections::{BTreeSet, HashMap};
use std::sync::OnceLock;

use bytes::Bytes;
use halo_protocol::{Circuit, Metadata, MetadataError, Resilience};
use serde_json::Value;

use super::access::{Access, Class};
use super::bundle::Bundler;
use super::callers::Callers;
use super::exclude::Exclusions;
use super::lenient::{Place, Record};
use super::names::Names;
use super::operation::{self, Source};
use super::templates::TemplatesBuilder;
use super::{
    Formats, METHODS, Parts, PathEntry, Registry, Tool, View, key_headers, manifest_head,
    operations, sensitive, template_of, with_defs,
};
use crate::validate::Validator;
use crate::{ApprovalRule, BuildError, DocumentLimits};

/// What compiling a document takes besides the document, as the builder was given it.
#[derive(Debug)]
pub(crate) struct Settings<'s> {
    pub(crate) document: &'s Value,
    /// Metadata by `operationId`, over what the operation's own extensions say.
    pub(crate) described: HashMap<String, Metadata>,
    /// With validation, whether `format` keywords are asserted.
    pub(crate) validate: Option<Formats>,
    pub(crate) limits: DocumentLimits,
    /// Written into the schemas of operations that declare no circuit.
    pub(crate) default_circuit: Option<Circuit>,
    /// `"approval": "required"` is written into the effects of the operations they match.
    pub(crate) approval_rules: Vec<ApprovalRule>,
    pub(crate) exclusions: Exclusions,
}

/// A path item whose `$ref` resolves nowhere, in a lenient build: no operations.
static UNREAD: Value = Value::Null;

/// The operations of one path item kept, with the place of each.
type Kept<'d> = Vec<(&'static str, &'d Value)>;

impl Settings<'_> {
    /// Walks the document once, with `described` (consumed as operations take it).
    pub(crate) fn compile(
        &self,
        mut described: HashMap<String, Metadata>,
        record: &mut Record,
    ) -> Result<Registry, BuildError> {
        let document = self.document;
        if let Some(version) = document.get("swagger") {
            return Err(BuildError::document(format!(
                "this is a Swagger {version} document; HALO reads OpenAPI 3.0 and 3.1 (convert \
                 it first, with swagger2openapi or the Swagger Editor)"
            )));
        }
        let bundler = Bundler::new(document, self.limits, record.is_lenient());
        let schemes = document.pointer("/components/securitySchemes");
        let default_security = document.get("security");
        let path_items = match document.get("paths") {
            None | Some(Value::Null) => &serde_json::Map::new(),
            Some(Value::Object(paths)) => paths,
            Some(_) => return Err(BuildError::document("`paths` is not an object")),
        };

        // A path item may be a reference (OpenAPI 3.1): each is followed once.
        let mut followed: Vec<(&String, &Value)> = Vec::with_capacity(path_items.len());
        for (index, (key, item)) in path_items.iter().enumerate() {
            if record.leaves_out(key, "*") {
                followed.push((key, &UNREAD));
                continue;
            }
            let item = match bundler.follow(item) {
                Ok(item) => item,
                Err(problem) => {
                    let place = Place {
                        order: (index, 0),
                        method: "*",
                        key,
                        operation_id: None,
                    };
                    record.skip(place, problem.into_error(key))?;
                    &UNREAD
                }
            };
            followed.push((key, item));
        }
        if let Some(excluded) = self.exclusions.unmatched(&followed) {
            return Err(BuildError::unknown_exclusion(excluded));
        }
        // Each path item's operations but those left out, found once for both walks below;
        // metadata given to an operation left out is dropped with it.
        let mut path_items: Vec<(&String, &Value, Kept<'_>)> = followed
            .into_iter()
            .map(|(key, item)| {
                let (kept, left_out): (Vec<_>, Vec<_>) =
                    operations(item).partition(|&(method, operation)| {
                        !(self
                            .exclusions
                            .excludes((key, template_of(key)), item, operation)
                            || record.leaves_out(key, method))
                    });
                for (_, operation) in left_out {
                    if let Some(id) = operation.get("operationId").and_then(Value::as_str) {
                        described.remove(id);
                    }
                }
                (key, item, kept)
            })
            .collect();
        // What each schema references is counted first, so that a definition used once
        // can be written in its place.
        for (index, (path_key, path_item, operations)) in path_items.iter_mut().enumerate() {
            let mut failed = Vec::new();
            for &(method, operation) in operations.iter() {
                let source = Source {
                    key: path_key,
                    template: template_of(path_key),
                    method,
                    path_item,
                    operation,
                };
                if let Err(error) = operation::survey(&source, &bundler) {
                    let place = place_of(&source, index);
                    skip(record, &mut described, place, error)?;
                    failed.push(method);
                }
            }
            operations.retain(|(method, _)| !failed.contains(method));
        }

        let mut walk = Walk {
            settings: self,
            bundler: &bundler,
            schemes,
            default_security,
            names: Names::default(),
            classes: Vec::new(),
            languages: BTreeSet::new(),
            check_rates: record.is_lenient(),
        };
        let mut templates = TemplatesBuilder::default();
        // Path keys that differ only in a `#fragment` share one entry.
        let mut by_template: HashMap<&str, usize> = HashMap::new();
        let mut tools = Vec::new();
        let mut places = Vec::new();
        let mut paths = Vec::new();
        for (index, &(path_key, path_item, ref operations)) in path_items.iter().enumerate() {
            let template = template_of(path_key);
            let mut methods = Vec::new();
            for &(method, operation) in operations {
                let source = Source {
                    key: path_key,
                    template,
                    method,
                    path_item,
                    operation,
                };
                let place = place_of(&source, index);
                let served = bundler.served();
                match walk.tool(&source, &mut described, record, place) {
                    Ok(tool) => {
                        methods.push((method, tools.len()));
                        tools.push(tool);
                        places.push(place);
                    }
                    Err(error) => {
                        bundler.rewind(served);
                        skip(record, &mut described, place, error)?;
                    }
                }
            }
            if methods.is_empty() {
                continue;
            }
            if let Some(&index) = by_template.get(template) {
                let entry: &mut PathEntry = &mut paths[index];
                entry.methods.extend(methods);
                continue;
            }
            if let Err(message) = templates.insert(template, paths.len()) {
                // Lenient, the path's operations are left out: they were the last tools.
                let first = tools.len() - methods.len();
                tools.truncate(first);
                for place in places.drain(first..) {
                    record.skip(place, BuildError::invalid_path(path_key, &message))?;
                }
                continue;
            }
            by_template.insert(template, paths.len());
            paths.push(PathEntry {
                template: template.to_owned(),
                methods,
            });
        }
        let templates = templates
            .build()
            .map_err(|e| BuildError::invalid_path("(all templates)", e))?;
        if let Some(operation_id) = described.keys().next() {
            return Err(BuildError::unknown_operation(operation_id));
        }

        let mut registry = Registry {
            index: OnceLock::new(),
            manifest_head: manifest_head(document.get("info"))?,
            tools,
            templates,
            paths,
            classes: walk.classes,
            languages: walk.languages.into_iter().collect(),
            key_headers: key_headers(schemes),
            full: View::empty(),
            root: None,
            skipped: Vec::new(),
        };
        registry.root = registry.templates.index("/");
        if record.is_lenient() {
            registry.repair_links(&places, record);
        }
        registry.check_links()?;
        registry.check_rates()?;
        registry.full = registry.render(None, None);
        Ok(registry)
    }
}

/// The operation of `source`, whose path key is the `index`th, as a place in the document.
fn place_of<'d>(source: &Source<'d>, index: usize) -> Place<'d> {
    let method = METHODS
        .iter()
        .position(|(_, method)| *method == source.method)
        .unwrap_or_default();
    Place {
        order: (index, method + 1),
        method: source.method,
        key: source.key,
        operation_id: source.operation_id(),
    }
}

/// Leaves out the operation at `place` ([`Record::skip`]), and the metadata given to it.
fn skip(
    record: &mut Record,
    described: &mut HashMap<String, Metadata>,
    place: Place<'_>,
    error: BuildError,
) -> Result<(), BuildError> {
    record.skip(place, error)?;
    if let Some(id) = place.operation_id {
        described.remove(id);
    }
    Ok(())
}

/// What the walk over the operations keeps from one to the next.
struct Walk<'w, 'd> {
    settings: &'w Settings<'d>,
    bundler: &'w Bundler<'d>,
    schemes: Option<&'d Value>,
    default_security: Option<&'d Value>,
    names: Names,
    /// The distinct access requirements of the tools so far.
    classes: Vec<Class>,
    languages: BTreeSet<String>,
    /// Whether each tool's rate limits are checked as it is made (lenient: a bad one leaves
    /// out only its operation), rather than all at the end.
    check_rates: bool,
}

impl<'d> Walk<'_, 'd> {
    /// The tool of one operation.
    fn tool(
        &mut self,
        source: &Source<'d>,
        described: &mut HashMap<String, Metadata>,
        record: &mut Record,
        place: Place<'d>,
    ) -> Result<Tool, BuildError> {
        let bundler = self.bundler;
        let limits = self.settings.limits;
        let mut meta = source.metadata()?;
        if let Some(extra) = source.operation_id().and_then(|id| described.remove(id)) {
            meta.merge(extra);
        }
        crate::approval_rule::apply(&self.settings.approval_rules, &mut meta, source.operation);
        if let Some(circuit) = self.settings.default_circuit {
            let resilience = meta.resilience.get_or_insert_with(Resilience::default);
            resilience.circuit.get_or_insert(circuit);
        }
        let locales = std::mem::take(&mut meta.locales);
        let name = self
            .names
            .assign(source.operation_id(), source.method, source.key);
        let label = source.label();
        let mut built = operation::build(
            source,
            name,
            meta,
            bundler,
            (self.schemes, self.default_security),
            record.is_lenient(),
        )?;
        let access = Class {
            access: Access::derive(
                source.operation.get("security").or(self.default_security),
                self.schemes,
            ),
            callers: Callers::read(source.operation).map_err(|message| {
                BuildError::metadata(
                    &label,
                    MetadataError::Invalid {
                        key: "x-halo-callers".to_owned(),
                        message,
                    },
                )
            })?,
        };
        let validator = self
            .settings
            .validate
            .map(|formats| {
                let mut checked = built.schema.input.clone();
                for field in checked.values_mut() {
                    with_defs(bundler, &mut field.schema);
                }
                let mut body = built.body.take();
                if let Some(Value::Object(schema)) = body.as_mut().map(|b| &mut b.schema) {
                    with_defs(bundler, schema);
                }
                Validator::compile(&checked, body.as_ref(), formats.0)
            })
            .transpose()
            .map_err(|message| BuildError::invalid_schema(&label, message))?;
        let parts = Parts::take(&mut built.schema, bundler)
            .map_err(|problem| problem.into_error(&label))?;
        let schema_bytes = parts.render(&built.schema);
        if schema_bytes.len() > limits.max_schema_bytes {
            return Err(BuildError::limit(
                &label,
                String::new(),
                "max_schema_bytes",
                limits.max_schema_bytes,
            ));
        }
        let entry_bytes = serde_json::to_vec(&built.entry).map_err(BuildError::document)?;
        if self.check_rates
            && let Some(error) = super::rates::problem(&built.schema, &built.entry.name)
        {
            return Err(error);
        }
        // Made: what the tool adds to the registry is added now.
        for reason in built.repairs {
            record.repair(place, reason);
        }
        self.languages.extend(locales.keys().cloned());
        let class = match access {
            access if access.is_open() => None,
            access => Some(
                match self.classes.iter().position(|known| *known == access) {
                    Some(index) => index,
                    None => {
                        self.classes.push(access);
                        self.classes.len() - 1
                    }
                },
            ),
        };
        Ok(Tool {
            entry_bytes: Bytes::from(entry_bytes),
            schema_bytes,
            parts,
            sensitive: sensitive::sensitive(&built.schema.input),
            entry: built.entry,
            schema: built.schema,
            locales,
            class,
            validator,
            own_stream: built.own_stream,
        })
    }
}
