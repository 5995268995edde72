//! `halo lint`: the quality of an API's descriptions, checked for CI.
//!
//! Fetches the manifest and every schema through the client (as the given credentials see
//! the API), runs [`Linter`] over them, and prints a report grouped by tool: exit 1 when any
//! finding is an error, 2 when the API cannot be linted. Without credentials, it notes that
//! only the public tools were checked when discovery says it depends on the caller
//! (`Vary: Authorization`, `Cache-Control: private`). With `--openapi FILE`, the tools are
//! those a server built from the document would serve to a caller that sees every tool
//! ([`document`]), and no server is asked.

mod document;

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;
use std::time::SystemTime;

use halo_client::Client;
use halo_client::protocol::lint::{Finding, Level, Linter, Report};
use halo_client::protocol::{Manifest, TagFilter, ToolEntry, ToolSchema, depends_on_caller};
use serde_json::json;

use crate::cli::{LintArgs, LintRule};
use crate::connect::describe_manifest;
use crate::failure::Failure;
use crate::output::{self, line, print_err, print_out};

/// Lints the API `client` talks to and prints the report (JSON with `json`).
pub(crate) async fn run(
    client: &Client,
    args: LintArgs,
    json: bool,
    anonymous: bool,
) -> Result<ExitCode, Failure> {
    let linter = linter(&args)?.at(SystemTime::now());
    let cannot = |failure: Failure| {
        Failure::Other(format!(
            "cannot lint {}: {}",
            client.base_url(),
            failure.message()
        ))
    };
    // One discovery: the tag filter picks the tools checked, and links may name the others.
    let discovered = client
        .discover_since(&[], None)
        .await
        .map_err(|e| cannot(e.into()))?
        .ok_or_else(|| {
            cannot(Failure::other(
                "the server answered OPTIONS / with 304 to a request that named no entity tag",
            ))
        })?;
    // Whether an anonymous caller sees less than others do, as the answer says.
    let personal = depends_on_caller(
        discovered.cache_control.as_deref(),
        discovered.vary.as_deref(),
    );
    let everything = discovered.manifest;
    let manifest = tagged(&everything, &args.tags);
    let tools = describe_manifest(client, manifest.clone())
        .await
        .map_err(cannot)?;
    let status = report(&linter, &args.tags, (&everything, &manifest), &tools, json);
    notes(&manifest, anonymous && personal);
    Ok(status)
}

/// Lints the OpenAPI document at `path` (`--openapi`): the tools a server built from it
/// would serve to a caller that sees every tool, with no server asked. Prints the report
/// as [`run`] does.
pub(crate) fn run_document(path: &Path, args: &LintArgs, json: bool) -> Result<ExitCode, Failure> {
    let linter = linter(args)?.at(SystemTime::now());
    let cannot =
        |message: String| Failure::Other(format!("cannot lint {}: {message}", path.display()));
    let served = document::Served::compile(path).map_err(cannot)?;
    let everything = served.manifest().map_err(cannot)?;
    let manifest = tagged(&everything, &args.tags);
    let tools = served.describe(manifest.tools.clone()).map_err(cannot)?;
    let status = report(&linter, &args.tags, (&everything, &manifest), &tools, json);
    if manifest.tools.is_empty() {
        print_err(if everything.tools.is_empty() {
            "halo: the document describes no operation: nothing was checked\n"
        } else {
            "halo: no operation of the document has these tags: nothing was checked\n"
        });
    }
    Ok(status)
}

/// The manifest with only the tools tagged with any of `tags` (all of them without tags).
fn tagged(everything: &Manifest, tags: &[String]) -> Manifest {
    let filter = TagFilter::parse(&tags.join(","));
    let mut manifest = everything.clone();
    manifest
        .tools
        .retain(|entry| filter.matches(entry.tags.iter().map(String::as_str)));
    manifest
}

/// Checks `tools` (those of `manifest`, the tools `everything` lists that the tags chose)
/// and prints the report: the exit status, 1 when a finding is an error.
fn report(
    linter: &Linter,
    tags: &[String],
    (everything, manifest): (&Manifest, &Manifest),
    tools: &[(ToolEntry, ToolSchema)],
    json: bool,
) -> ExitCode {
    let listed: Vec<&ToolEntry> = everything.tools.iter().collect();
    let report = linter.check_among(tools, &listed);
    if json {
        print_out(&output::json(&json!({
            "api": manifest.api,
            "version": manifest.version,
            "tags": tags,
            "tools_checked": report.tools_checked,
            "errors": report.errors,
            "warnings": report.warnings,
            "findings": report.findings,
        })));
    } else {
        let heading = output::heading(&manifest.api, &manifest.version);
        print_out(&text(&heading, tags, &report));
    }
    if report.has_errors() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// The linter the flags configure; a rule given two levels is a usage error.
fn linter(args: &LintArgs) -> Result<Linter, Failure> {
    let mut linter = Linter::new()
        .schema_budget(args.schema_budget)
        .manifest_budget(args.manifest_budget);
    let mut given: Vec<(LintRule, &str)> = Vec::new();
    for (rules, level, flag) in [
        (&args.allow, Level::Allow, "--allow"),
        (&args.warn, Level::Warn, "--warn"),
        (&args.deny, Level::Deny, "--deny"),
    ] {
        for rule in rules {
            if let Some((_, other)) = given.iter().find(|(r, f)| r == rule && *f != flag) {
                return Err(Failure::Other(format!(
                    "`{rule}` is given to both {other} and {flag}; give each rule one level"
                )));
            }
            given.push((*rule, flag));
            linter = match rule {
                LintRule::Warnings => linter.warnings(level),
                LintRule::Rule(rule) => linter.level(*rule, level),
            };
        }
    }
    Ok(linter)
}

/// The report for people: a heading, the findings grouped by tool, a summary line.
fn text(heading: &str, tags: &[String], report: &Report) -> String {
    let mut out = heading.to_owned();
    if !tags.is_empty() {
        let _ = write!(out, " (tools tagged {})", line(&tags.join(",")));
    }
    out.push('\n');
    let mut current: Option<(&str, &str, &str)> = None;
    for finding in &report.findings {
        let tool = (
            finding.tool.as_str(),
            finding.method.as_str(),
            finding.url.as_str(),
        );
        if current != Some(tool) {
            let _ = write!(
                out,
                "\n{} ({} {})\n",
                line(tool.0),
                line(tool.1),
                line(tool.2)
            );
            current = Some(tool);
        }
        out.push_str(&finding_text(finding));
    }
    if !report.findings.is_empty() {
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "{}, {}, {}",
        count(report.errors, "error"),
        count(report.warnings, "warning"),
        count(report.tools_checked, "tool") + " checked"
    );
    out
}

fn finding_text(finding: &Finding) -> String {
    let mut out = format!(
        "  {}[{}]: {}\n",
        finding.severity,
        finding.rule,
        line(&finding.message)
    );
    if let Some(pointer) = &finding.pointer {
        let _ = writeln!(out, "    at:   {}", line(pointer));
    }
    let _ = writeln!(out, "    help: {}", line(&finding.hint));
    out
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

/// What the report cannot say by itself, on standard error: lint sees only what the
/// credentials may discover, and `partial` when no credentials were given and discovery
/// says its answer depends on them (an API without an authenticator shows everyone all).
fn notes(manifest: &Manifest, partial: bool) {
    if manifest.tools.is_empty() {
        print_err("halo: the API lists no tools to these credentials: nothing was checked\n");
    }
    if partial {
        print_err(
            "halo: no credentials were given, so only the tools anyone may discover were \
             checked; lint with credentials that see every tool (--bearer, --api-key or \
             --credentials)\n",
        );
    }
}
