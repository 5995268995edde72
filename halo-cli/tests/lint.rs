//! `halo lint` over real HTTP: a deliberately poor API (axum + utoipa + `HaloLayer`, built
//! here) fails with each rule it breaks reported, as text and as JSON; a plain app (utoipa
//! only, no HALO metadata yet) passes with warnings, and fails with `-D warnings`;
//! `--allow`, `--deny` and `-D warnings` change the exit status; what the credentials cannot
//! see is not checked (an anonymous lint says so when discovery depends on the caller, and
//! only then); a module-name tag such as `admin` is a warning; the sample bookstore passes,
//! warnings denied; usage and network failures exit 2. With `--openapi FILE`, a document is
//! linted with no server, as the server built from it would be (the same report, GitHub's
//! document included); Stripe's is linted whole, offline; a file that cannot be read, is not
//! JSON (YAML says so), is Swagger 2.0 or does not compile exits 2.

use crate::common;

use std::collections::BTreeSet;

use axum::Json;
use axum::extract::{Path, Query};
use axum::routing::options;
use common::halo;
use halo_axum::{HaloLayer, Principal, StaticAuthenticator, halo};
use halo_client::agent::OpenAiProvider;
use halo_tests::BearerScheme;
use halo_tests::{TestServer, spawn};
use serde::Deserialize;
use serde_json::{Value, json};
use utoipa::{IntoParams, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

// The request types only describe the API (`dead_code`): the handlers read nothing.

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct Filter {
    q: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
struct Size {
    width: u32,
    /// Height in millimetres.
    height: u32,
}

#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
struct NewWidget {
    /// What the widget is called.
    name: String,
    /// How big it is.
    size: Size,
}

#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
struct Paint {
    /// The colour, e.g. `red`.
    colour: String,
}

/// List widgets.
// No `why`, no domain tag, an undescribed query parameter.
#[utoipa::path(get, path = "/widgets", tags = ["read"], params(Filter),
    responses((status = 200, body = Vec<String>)))]
async fn list_widgets(Query(_): Query<Filter>) -> Json<Vec<String>> {
    Json(vec![])
}

/// Make a widget.
// Neither `read` nor `write`; reversible without `undo`; no example; a nested property
// without a description.
#[halo(why = "Use to make a widget", reversible = true)]
#[utoipa::path(post, path = "/widgets", tags = ["widgets"], request_body = NewWidget,
    responses((status = 201)))]
async fn create_widget(Json(_): Json<Value>) {}

/// Scrap a widget.
// `read` on DELETE.
#[halo(why = "Use to scrap a widget for good", reversible = false)]
#[utoipa::path(delete, path = "/widgets/{id}", tags = ["widgets", "read"],
    params(("id" = u64, Path, description = "The widget's id")),
    responses((status = 204)))]
async fn scrap_widget(Path(_): Path<u64>) {}

// No description at all; does not say whether it can be undone; an example with an
// argument the tool does not take, and without the required one.
#[halo(why = "Use to paint a widget", example(input = { "id": 1, "color": "red" }))]
#[utoipa::path(post, path = "/widgets/{id}/paint", tags = ["widgets", "write"],
    params(("id" = u64, Path, description = "The widget's id")), request_body = Paint,
    responses((status = 204)))]
async fn paint_widget(Path(_): Path<u64>, Json(_): Json<Value>) {}

/// Find widgets by name (old).
// Deprecated without a sunset date.
#[halo(why = "Do not use: list_widgets does more", status = "deprecated")]
#[utoipa::path(get, path = "/widgets/find", tags = ["widgets", "read"],
    responses((status = 200, body = Vec<String>)))]
async fn find_widgets() -> Json<Vec<String>> {
    Json(vec![])
}

/// Count widgets (old).
// Past its sunset, replaced by a tool only admins may see.
#[halo(
    why = "Do not use: count_all_widgets replaces it",
    status = "deprecated",
    sunset = "2001-01-01",
    replace_with = "/admin/widgets/count"
)]
#[utoipa::path(get, path = "/widgets/count", tags = ["widgets", "read"],
    responses((status = 200, body = u64)))]
async fn count_widgets() -> Json<u64> {
    Json(0)
}

/// Count every widget, hidden ones included.
#[halo(why = "Use to count widgets for a stock report")]
#[utoipa::path(get, path = "/admin/widgets/count", tags = ["widgets", "read", "admin"],
    responses((status = 200, body = u64)), security(("bearer" = ["admin"])))]
async fn count_all_widgets() -> Json<u64> {
    Json(0)
}

#[derive(OpenApi)]
#[openapi(info(title = "Widgets", version = "0.1.0"), modifiers(&BearerScheme))]
struct Doc;

/// The poor API, with `admin` the only token.
async fn poor_api() -> TestServer {
    poor_api_with(|builder| builder).await
}

/// The poor API, its layer configured further by `configure`.
async fn poor_api_with(
    configure: impl FnOnce(halo_axum::HaloBuilder) -> halo_axum::HaloBuilder,
) -> TestServer {
    let (router, api) = OpenApiRouter::with_openapi(Doc::openapi())
        .routes(routes!(list_widgets, create_widget))
        .routes(routes!(scrap_widget))
        .routes(routes!(paint_widget))
        .routes(routes!(find_widgets))
        .routes(routes!(count_widgets))
        .routes(routes!(count_all_widgets))
        .split_for_parts();
    let halo = configure(HaloLayer::builder(api))
        .authenticator(
            StaticAuthenticator::new()
                .bearer("admin", Principal::new("admin").with_scopes(["admin"])),
        )
        .build()
        .expect("poor, but valid, metadata");
    spawn(router.layer(halo)).await
}

/// `(rule, tool)` of every finding of a JSON report.
fn found(report: &Value) -> BTreeSet<(String, String)> {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().expect("a rule").to_owned(),
                f["tool"].as_str().expect("a tool").to_owned(),
            )
        })
        .collect()
}

fn finding<'a>(report: &'a Value, rule: &str, tool: &str) -> &'a Value {
    report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .find(|f| f["rule"] == rule && f["tool"] == tool)
        .unwrap_or_else(|| panic!("no {rule} on {tool}: {report:#}"))
}

/// What the poor API breaks, as an anonymous caller sees it.
const EXPECTED: [(&str, &str); 13] = [
    ("missing-why", "list_widgets"),
    ("missing-domain-tag", "list_widgets"),
    ("missing-input-description", "list_widgets"),
    ("read-write-tag", "create_widget"),
    ("missing-example", "create_widget"),
    ("missing-undo", "create_widget"),
    ("missing-input-description", "create_widget"),
    ("tag-contradicts-method", "scrap_widget"),
    ("missing-description", "paint_widget"),
    ("missing-reversible", "paint_widget"),
    ("example-mismatch", "paint_widget"),
    ("missing-sunset", "find_widgets"),
    ("past-sunset", "count_widgets"),
];

/// Every error-level rule the poor API breaks.
const ERRORS: &str = "missing-domain-tag,tag-contradicts-method,missing-undo,example-mismatch";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poor_api_fails_with_every_rule_it_breaks() {
    let server = poor_api().await;
    let base = server.base_url();

    let run = halo(&["--json", "lint", &base]).expect(1);
    let report = run.json();
    assert_eq!(report["api"], "Widgets");
    assert_eq!(report["tools_checked"], 6, "the admin tool is hidden");
    let rules = found(&report);
    let mut expected: BTreeSet<(String, String)> = EXPECTED
        .iter()
        .map(|(rule, tool)| ((*rule).to_owned(), (*tool).to_owned()))
        .collect();
    expected.insert(("unknown-link".into(), "count_widgets".into()));
    assert_eq!(rules, expected, "{report:#}");

    // Messages name the tool, inputs their parameter and pointer, and every finding has a
    // hint.
    let why = finding(&report, "missing-why", "list_widgets");
    assert_eq!(why["level"], "warning", "a plain app has no `why` yet");
    assert_eq!(
        finding(&report, "read-write-tag", "create_widget")["level"],
        "warning"
    );
    assert_eq!(
        finding(&report, "tag-contradicts-method", "scrap_widget")["level"],
        "error"
    );
    assert_eq!(
        finding(&report, "missing-sunset", "find_widgets")["level"],
        "warning",
        "a plain app's deprecated operations have no date yet"
    );
    assert_eq!(
        (why["method"].as_str(), why["url"].as_str()),
        (Some("GET"), Some("/widgets"))
    );
    assert!(
        why["message"].as_str().unwrap().contains("`list_widgets`"),
        "{why}"
    );
    let query = finding(&report, "missing-input-description", "list_widgets");
    assert_eq!(
        (query["param"].as_str(), query["pointer"].as_str()),
        (Some("q"), Some("/input/q"))
    );
    assert_eq!(query["level"], "warning");
    let nested = finding(&report, "missing-input-description", "create_widget");
    assert_eq!(nested["param"], "size");
    assert_eq!(nested["pointer"], "/input/size/properties/width");
    let mismatches: Vec<&Value> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "example-mismatch")
        .collect();
    let params: BTreeSet<&str> = mismatches
        .iter()
        .filter_map(|f| f["param"].as_str())
        .collect();
    assert_eq!(params, BTreeSet::from(["color", "colour"]));
    let link = finding(&report, "unknown-link", "count_widgets");
    assert_eq!(link["pointer"], "/replace_with");
    assert!(
        link["message"]
            .as_str()
            .unwrap()
            .contains("/admin/widgets/count")
    );
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| { f["hint"].as_str().is_some_and(|hint| !hint.is_empty()) })
    );
    let errors = report["errors"].as_u64().unwrap();
    let warnings = report["warnings"].as_u64().unwrap();
    assert_eq!(
        errors + warnings,
        report["findings"].as_array().unwrap().len() as u64
    );
    // It has an authenticator and discovery says it depends on the caller (`Vary:
    // authorization`): the anonymous lint saw only the public tools, and says so.
    assert!(
        run.stderr.contains(
            "halo: no credentials were given, so only the tools anyone may discover were checked"
        ),
        "{run:#?}"
    );

    // The same, for people: grouped by tool, then one summary line.
    let text = halo(&["lint", &base]).expect(1);
    let out = &text.stdout;
    assert!(out.starts_with("Widgets 0.1.0\n"), "{out}");
    let list = out
        .find("\nlist_widgets (GET /widgets)\n")
        .expect("a list_widgets group");
    let create = out
        .find("\ncreate_widget (POST /widgets)\n")
        .expect("a create_widget group");
    assert!(list < create, "{out}");
    assert_eq!(
        out.matches("list_widgets (GET /widgets)").count(),
        1,
        "{out}"
    );
    assert!(
        out.contains("  warning[missing-why]: `list_widgets` has no `why`"),
        "{out}"
    );
    assert!(
        out.contains("  error[missing-domain-tag]: `list_widgets` has no domain tag"),
        "{out}"
    );
    assert!(out.contains("    at:   /input/q\n"), "{out}");
    assert!(out.contains("    help: "), "{out}");
    assert!(
        out.ends_with(&format!(
            "\n{errors} errors, {warnings} warnings, 6 tools checked\n"
        )),
        "{out}"
    );

    // With credentials that see the admin tool, the link resolves and it is checked too.
    let admin = halo(&["--bearer", "admin", "--json", "lint", &base]).expect(1);
    let report = admin.json();
    assert_eq!(report["tools_checked"], 7);
    assert!(
        !found(&report)
            .iter()
            .any(|(rule, _)| rule == "unknown-link"),
        "{report:#}"
    );
    assert!(!admin.stderr.contains("no credentials"), "{admin:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn levels_change_the_exit_status() {
    let server = poor_api().await;
    let base = server.base_url();
    let admin = ["--bearer", "admin", "--json", "lint", base.as_str()];
    let lint = |extra: &[&str]| {
        let mut args = admin.to_vec();
        args.extend_from_slice(extra);
        halo(&args)
    };

    // Every error allowed: warnings alone pass.
    let allowed = lint(&["--allow", ERRORS]).expect(0);
    let report = allowed.json();
    assert_eq!(report["errors"], 0);
    assert!(report["warnings"].as_u64().unwrap() > 0);
    assert!(
        !found(&report)
            .iter()
            .any(|(rule, _)| rule == "missing-undo")
    );

    // ... unless warnings are denied, or one of them is.
    let denied = lint(&["--allow", ERRORS, "-D", "warnings"]).expect(1);
    assert_eq!(denied.json()["warnings"], 0);
    assert_eq!(denied.json()["errors"], report["warnings"]);
    let one = lint(&["-A", ERRORS, "--deny", "missing-example"]).expect(1);
    assert_eq!(
        finding(&one.json(), "missing-example", "create_widget")["level"],
        "error"
    );

    // An error made a warning no longer fails.
    let all_but_undo: Vec<&str> = ERRORS.split(',').filter(|r| *r != "missing-undo").collect();
    let all_but_undo = all_but_undo.join(",");
    let warned = lint(&["-A", &all_but_undo, "--warn", "missing-undo"]).expect(0);
    let report = warned.json();
    assert_eq!(report["errors"], 0);
    assert_eq!(
        finding(&report, "missing-undo", "create_widget")["level"],
        "warning"
    );
    // `-A warnings` silences every warning, as in rustc.
    let silent = lint(&["-A", &all_but_undo, "-W", "missing-undo", "-A", "warnings"]).expect(0);
    assert_eq!(silent.json()["findings"], json!([]));

    // Unknown rules and a rule given two levels are usage errors.
    let unknown = lint(&["--deny", "missing-whyy"]).expect(2);
    assert!(
        unknown.stderr.contains("unknown lint rule `missing-whyy`"),
        "{unknown:#?}"
    );
    assert!(unknown.stdout.is_empty(), "{unknown:#?}");
    let twice = lint(&["--allow", "missing-why", "--deny", "missing-why"]).expect(2);
    assert!(
        twice
            .stderr
            .contains("`missing-why` is given to both --allow and --deny"),
        "{twice:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_budgets_are_warnings_naming_the_largest_parts() {
    let server = poor_api().await;
    let base = server.base_url();
    let lint = |extra: &[&str]| {
        let mut args = vec![
            "--bearer",
            "admin",
            "--json",
            "lint",
            base.as_str(),
            "-A",
            ERRORS,
        ];
        args.extend_from_slice(extra);
        halo(&args)
    };
    // Within the default budgets, as the first test shows; over small ones, warnings.
    let run = lint(&["--schema-budget", "60", "--manifest-budget", "150"]).expect(0);
    let report = run.json();
    let schema = finding(&report, "schema-budget", "create_widget");
    assert_eq!(schema["level"], "warning");
    let message = schema["message"].as_str().unwrap();
    assert!(
        message.starts_with("`create_widget`: the schema of POST /widgets costs ~"),
        "{message}"
    );
    assert!(message.contains("tokens (budget 60): "), "{message}");
    assert!(message.contains("input.size ~"), "{message}");
    assert!(
        schema["pointer"].as_str().unwrap().starts_with('/'),
        "{schema}"
    );
    let manifest = finding(&report, "manifest-budget", "manifest");
    assert_eq!(
        (manifest["method"].as_str(), manifest["url"].as_str()),
        (Some("OPTIONS"), Some("/"))
    );
    let message = manifest["message"].as_str().unwrap();
    assert!(
        message.starts_with("the manifest lists 7 tools costing ~"),
        "{message}"
    );
    assert!(
        message.contains("(budget 150): tag widgets (6 tools) ~"),
        "{message}"
    );
    assert!(
        manifest["hint"]
            .as_str()
            .unwrap()
            .contains("--manifest-budget"),
        "{manifest}"
    );
    // For people, the manifest is a group of its own; denied, the budgets fail the check.
    let text = halo(&[
        "--bearer",
        "admin",
        "lint",
        &base,
        "-A",
        ERRORS,
        "--manifest-budget",
        "150",
        "-D",
        "manifest-budget",
    ])
    .expect(1);
    assert!(
        text.stdout
            .contains("\nmanifest (OPTIONS /)\n  error[manifest-budget]: "),
        "{text:#?}"
    );
    let roomy = lint(&["--schema-budget", "100000", "--manifest-budget", "100000"]).expect(0);
    assert!(
        !found(&roomy.json())
            .iter()
            .any(|(rule, _)| rule.ends_with("-budget")),
        "{roomy:#?}"
    );
    let bad = lint(&["--schema-budget", "lots"]).expect(2);
    assert!(bad.stderr.contains("--schema-budget"), "{bad:#?}");
    let help = halo(&["lint", "--help"]).expect(0);
    for needle in [
        "--schema-budget",
        "--manifest-budget",
        "schema-budget:",
        "[default: 4000]",
    ] {
        assert!(help.stdout.contains(needle), "{needle}: {help:#?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bookstore_passes_with_warnings_denied() {
    let server = spawn(bookstore::app()).await;
    let base = server.base_url();
    for credentials in [&["--bearer", "demo-admin"][..], &[]] {
        let mut args = credentials.to_vec();
        args.extend(["--json", "lint", &base, "-D", "warnings"]);
        let report = halo(&args).expect(0).json();
        assert_eq!(report["findings"], json!([]), "{report:#}");
        let checked = report["tools_checked"].as_u64().unwrap();
        assert_eq!(checked, if credentials.is_empty() { 4 } else { 15 });
    }

    // With a model, the bookstore also lists its hosted shopping assistant, which passes too.
    // (Linting never runs it, so the model is never asked.)
    let model = OpenAiProvider::builder()
        .base_url("http://127.0.0.1:9/v1")
        .model("unused")
        .build()
        .expect("a provider");
    let hosting = spawn(bookstore::app_with(
        bookstore::AppState::seeded(),
        bookstore::Options::default().llm(model),
    ))
    .await;
    let report = halo(&[
        "--bearer",
        "demo-admin",
        "--json",
        "lint",
        &hosting.base_url(),
        "-D",
        "warnings",
    ])
    .expect(0)
    .json();
    assert_eq!(report["findings"], json!([]), "{report:#}");
    assert_eq!(report["tools_checked"], 16);
    let text = halo(&["--bearer", "demo-admin", "lint", &base, "--tags", "orders"]).expect(0);
    assert_eq!(
        text.stdout,
        "Bookstore 1.2.0 (tools tagged orders)\n0 errors, 0 warnings, 2 tools checked\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_that_cannot_be_linted_exits_2() {
    // Discovery answers something that is not a manifest.
    let broken = spawn(axum::Router::new().route(
        "/",
        options(|| async { ([("content-type", "application/llm+json")], "not json") }),
    ))
    .await;
    let run = halo(&["lint", &broken.base_url()]).expect(2);
    assert!(run.stderr.contains("cannot lint"), "{run:#?}");
    assert!(run.stdout.is_empty(), "{run:#?}");

    // Discovery needs credentials that were not given.
    let guarded = poor_api_with(|builder| builder.require_credentials(true)).await;
    let run = halo(&["lint", &guarded.base_url()]).expect(2);
    assert!(run.stderr.contains("cannot lint"), "{run:#?}");
    assert!(run.stderr.contains("401"), "{run:#?}");
    let run = halo(&["--bearer", "admin", "lint", &guarded.base_url()]).expect(1);
    assert!(run.stdout.ends_with("7 tools checked\n"), "{run:#?}");

    // Nothing listens.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let run = halo(&["lint", &format!("http://127.0.0.1:{port}")]).expect(2);
    assert!(run.stderr.contains("could not connect"), "{run:#?}");
}

// A plain app: utoipa annotations as any axum app has them, and nothing of HALO's own (no
// `#[halo]`, no `read`/`write` tags; `show_gadget` has no tags at all, and gets its domain
// tag from its path).

/// A gadget.
#[derive(Debug, serde::Serialize, ToSchema)]
struct Gadget {
    /// The gadget's id.
    id: u64,
    /// What the gadget is called.
    name: String,
}

/// A gadget to add.
#[derive(Debug, Deserialize, ToSchema)]
#[allow(dead_code)]
struct NewGadget {
    /// What the gadget is called.
    name: String,
}

/// List gadgets.
#[utoipa::path(get, path = "/gadgets", tags = ["gadgets"],
    responses((status = 200, body = Vec<Gadget>)))]
async fn list_gadgets() -> Json<Vec<Gadget>> {
    Json(vec![])
}

/// Add a gadget.
#[utoipa::path(post, path = "/gadgets", tags = ["gadgets"], request_body = NewGadget,
    responses((status = 201, body = Gadget)))]
async fn add_gadget(Json(_): Json<Value>) -> Json<Gadget> {
    Json(Gadget {
        id: 1,
        name: "sprocket".into(),
    })
}

/// Show a gadget.
#[utoipa::path(get, path = "/gadgets/{id}",
    params(("id" = u64, Path, description = "The gadget's id")),
    responses((status = 200, body = Gadget)))]
async fn show_gadget(Path(id): Path<u64>) -> Json<Gadget> {
    Json(Gadget {
        id,
        name: "sprocket".into(),
    })
}

/// Remove a gadget.
#[utoipa::path(delete, path = "/gadgets/{id}", tags = ["gadgets"],
    params(("id" = u64, Path, description = "The gadget's id")),
    responses((status = 204)))]
async fn remove_gadget(Path(_): Path<u64>) {}

#[derive(OpenApi)]
#[openapi(info(title = "Gadgets", version = "1.0.0"))]
struct PlainDoc;

/// The plain app behind a `HaloLayer`, nothing else configured.
async fn plain_app() -> TestServer {
    let (router, api) = OpenApiRouter::with_openapi(PlainDoc::openapi())
        .routes(routes!(list_gadgets, add_gadget))
        .routes(routes!(show_gadget))
        .routes(routes!(remove_gadget))
        .split_for_parts();
    spawn(router.layer(HaloLayer::from_openapi(api))).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_app_passes_with_warnings() {
    let server = plain_app().await;
    let base = server.base_url();

    // What it cannot say yet (no `why`, no `read`/`write` tag, writes without examples or
    // `reversible`) is reported, as warnings: the check passes.
    let run = halo(&["--json", "lint", &base]).expect(0);
    let report = run.json();
    assert_eq!(report["tools_checked"], 4);
    assert_eq!(report["errors"], 0, "{report:#}");
    let rules: BTreeSet<String> = found(&report).into_iter().map(|(rule, _)| rule).collect();
    assert_eq!(
        rules,
        BTreeSet::from([
            "missing-why".to_owned(),
            "read-write-tag".to_owned(),
            "missing-example".to_owned(),
            "missing-reversible".to_owned(),
        ]),
        "{report:#}"
    );
    for tool in ["list_gadgets", "add_gadget", "show_gadget", "remove_gadget"] {
        for rule in ["missing-why", "read-write-tag"] {
            assert_eq!(finding(&report, rule, tool)["level"], "warning");
        }
    }
    let warnings = report["warnings"].as_u64().unwrap();
    assert_eq!(warnings, 12, "{report:#}");

    let text = halo(&["lint", &base]).expect(0);
    let out = &text.stdout;
    assert!(
        out.contains("  warning[missing-why]: `list_gadgets` has no `why`"),
        "{out}"
    );
    // Without an authenticator, discovery shows every caller everything (`Vary: accept`):
    // no note that an anonymous lint saw only part of the API.
    assert!(!run.stderr.contains("credentials"), "{run:#?}");
    assert_eq!(text.stderr, "", "{text:#?}");
    assert!(!out.contains("error["), "{out}");
    assert!(
        out.ends_with("\n0 errors, 12 warnings, 4 tools checked\n"),
        "{out}"
    );

    // Warnings denied, as a CI gate on a finished API would: the same findings fail.
    let denied = halo(&["--json", "lint", &base, "-D", "warnings"]).expect(1);
    let denied = denied.json();
    assert_eq!(
        (denied["errors"].as_u64(), denied["warnings"].as_u64()),
        (Some(warnings), Some(0))
    );
    assert_eq!(
        finding(&denied, "missing-why", "add_gadget")["level"],
        "error"
    );
    // Or only the rules asked for.
    let why = halo(&["--json", "lint", &base, "--deny", "missing-why"]).expect(1);
    assert_eq!(why.json()["errors"], 4);
}

// A freshly adopted app whose handlers live in a module named `admin`: utoipa's `OpenApi`
// derive tags every untagged handler it lists with its module's name, here one of HALO's
// generic tags. Each has its `why` and described inputs; it cannot have a `read` or `write`
// tag besides the module's (a handler given `tags` loses the module's name).
mod admin {
    use axum::Json;
    use axum::extract::Path;
    use halo_axum::halo;

    /// List the back office's staff accounts.
    #[halo(why = "Use to see who can sign in to the back office")]
    #[utoipa::path(get, path = "/staff", responses((status = 200, body = Vec<String>)))]
    pub(super) async fn list_staff() -> Json<Vec<String>> {
        Json(vec![])
    }

    /// Show one staff account.
    #[halo(why = "Use when you know the account's id, to see its name")]
    #[utoipa::path(get, path = "/staff/{id}",
        params(("id" = u64, Path, description = "The account's id")),
        responses((status = 200, body = String)))]
    pub(super) async fn show_staff(Path(id): Path<u64>) -> Json<String> {
        Json(id.to_string())
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Back office", version = "1.0.0"),
    paths(admin::list_staff, admin::show_staff)
)]
struct BackOfficeDoc;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_named_like_a_generic_tag_is_a_warning() {
    let app = axum::Router::new()
        .route("/staff", axum::routing::get(admin::list_staff))
        .route("/staff/{id}", axum::routing::get(admin::show_staff))
        .layer(HaloLayer::from_openapi(BackOfficeDoc::openapi()));
    let server = spawn(app).await;
    let base = server.base_url();

    let run = halo(&["--json", "lint", &base]).expect(0);
    let report = run.json();
    assert_eq!(
        (report["tools_checked"].as_u64(), report["errors"].as_u64()),
        (Some(2), Some(0)),
        "{report:#}"
    );
    let rules: BTreeSet<String> = found(&report).into_iter().map(|(rule, _)| rule).collect();
    assert_eq!(
        rules,
        BTreeSet::from(["generic-domain-tag".to_owned(), "read-write-tag".to_owned()]),
        "{report:#}"
    );
    for tool in ["list_staff", "show_staff"] {
        let tag = finding(&report, "generic-domain-tag", tool);
        assert_eq!(tag["level"], "warning", "{tag}");
        assert_eq!(tag["pointer"], "/tags", "{tag}");
        let message = tag["message"].as_str().unwrap();
        assert!(message.contains("only generic ones: `admin`"), "{message}");
    }
    let text = halo(&["lint", &base]).expect(0);
    assert!(
        text.stdout
            .contains("  warning[generic-domain-tag]: `list_staff` has no domain tag"),
        "{text:#?}"
    );
    assert!(!text.stdout.contains("error["), "{text:#?}");
    // No authenticator: every caller discovers every tool, so there is nothing to note.
    assert_eq!(text.stderr, "", "{text:#?}");

    // Denied, as a finished API's CI gate may: it fails.
    let denied = halo(&["--json", "lint", &base, "--deny", "generic-domain-tag"]).expect(1);
    let denied = denied.json();
    assert_eq!(denied["errors"], 2, "{denied:#}");
    assert_eq!(
        finding(&denied, "generic-domain-tag", "show_staff")["level"],
        "error"
    );
}

// `--openapi FILE`: a document linted as a server built from it would serve it, no server.

/// A document of one clean operation (`list_pets`), and with `poor` one that breaks an
/// error-level rule too (`release_pet`: `read` on a `DELETE`).
fn pets_document(poor: bool) -> Value {
    let mut paths = json!({"/pets": {"get": {
        "operationId": "list_pets",
        "summary": "List the pets in the shop",
        "tags": ["pets", "read"],
        "x-halo-why": "Use to see which pets are for sale",
        "parameters": [{"name": "species", "in": "query", "description": "Only pets of this species",
                        "schema": {"type": "string"}}],
        "responses": {"200": {"description": "The pets",
            "content": {"application/json": {"schema": {"type": "array", "items": {"type": "string"}}}}}}
    }}});
    if poor {
        paths["/pets/{id}"] = json!({"delete": {
            "operationId": "release_pet",
            "summary": "Release a pet",
            "tags": ["pets", "read"],
            "x-halo-why": "Use when a pet leaves the shop",
            "x-halo-effects": {"reversible": false},
            "parameters": [{"name": "id", "in": "path", "required": true,
                            "description": "The pet's id", "schema": {"type": "integer"}}],
            "responses": {"204": {"description": "Released"}}
        }});
    }
    json!({"openapi": "3.0.3", "info": {"title": "Pets", "version": "1.0.0"}, "paths": paths})
}

/// `text` written to `name` in `dir`; its path, as an argument.
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let path = dir.path().join(name);
    std::fs::write(&path, text).expect("write the document");
    path.to_str().expect("a UTF-8 path").to_owned()
}

#[test]
fn an_openapi_document_is_linted_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let clean = write(&dir, "clean.json", &pets_document(false).to_string());
    let poor = write(&dir, "poor.json", &pets_document(true).to_string());

    // A clean operation passes, warnings denied.
    let run = halo(&["lint", "--openapi", &clean, "-D", "warnings"]).expect(0);
    assert_eq!(
        run.stdout, "Pets 1.0.0\n0 errors, 0 warnings, 1 tool checked\n",
        "{run:#?}"
    );
    // Every tool is checked: no note about credentials.
    assert_eq!(run.stderr, "", "{run:#?}");

    // One that breaks a rule fails with the finding, as text and as JSON.
    let text = halo(&["lint", "--openapi", &poor]).expect(1);
    let out = &text.stdout;
    assert!(out.starts_with("Pets 1.0.0\n"), "{out}");
    assert!(
        out.contains("\nrelease_pet (DELETE /pets/{id})\n  error[tag-contradicts-method]: "),
        "{out}"
    );
    assert!(
        out.ends_with("\n1 error, 0 warnings, 2 tools checked\n"),
        "{out}"
    );
    assert!(!out.contains("list_pets ("), "{out}");
    assert_eq!(text.stderr, "", "{text:#?}");
    let report = halo(&["--json", "lint", "--openapi", &poor])
        .expect(1)
        .json();
    assert_eq!(
        (report["api"].as_str(), report["tools_checked"].as_u64()),
        (Some("Pets"), Some(2))
    );
    assert_eq!(
        found(&report),
        BTreeSet::from([("tag-contradicts-method".into(), "release_pet".into())]),
        "{report:#}"
    );
    let finding = finding(&report, "tag-contradicts-method", "release_pet");
    assert_eq!(
        (finding["method"].as_str(), finding["url"].as_str()),
        (Some("DELETE"), Some("/pets/{id}"))
    );

    // The flags work as against a server: levels, budgets, tags.
    halo(&["lint", "--openapi", &poor, "-A", "tag-contradicts-method"]).expect(0);
    let budget = halo(&[
        "--json",
        "lint",
        "--openapi",
        &poor,
        "--schema-budget",
        "10",
    ])
    .expect(1);
    assert!(
        found(&budget.json()).contains(&("schema-budget".into(), "list_pets".into())),
        "{budget:#?}"
    );
    let tagged = halo(&["lint", "--openapi", &poor, "--tags", "nothing"]).expect(0);
    assert!(tagged.stdout.ends_with("0 tools checked\n"), "{tagged:#?}");
    assert!(
        tagged
            .stderr
            .contains("no operation of the document has these tags"),
        "{tagged:#?}"
    );

    // The URL and --openapi exclude each other, and one of them is needed.
    let both = halo(&["lint", "http://127.0.0.1:9", "--openapi", &clean]).expect(2);
    assert!(both.stderr.contains("cannot be used with"), "{both:#?}");
    let neither = halo(&["lint"]).expect(2);
    assert!(neither.stderr.contains("--openapi <FILE>"), "{neither:#?}");
    let help = halo(&["lint", "--help"]).expect(0);
    assert!(help.stdout.contains("--openapi <FILE>"), "{help:#?}");
    assert!(
        help.stdout.contains("halo lint --openapi openapi.json"),
        "{help:#?}"
    );
}

/// The report of `halo --json lint` over `args`, and its exit status.
fn report_of(args: &[&str]) -> (i32, Value) {
    let run = halo(args);
    assert!(matches!(run.code, 0 | 1), "{run:#?}");
    (run.code, run.json())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_lints_as_the_server_built_from_it_does() {
    let dir = tempfile::tempdir().unwrap();
    // GitHub's document has a tool at `/`, where `OPTIONS` is the manifest.
    for (name, document) in [
        ("pets", pets_document(true)),
        ("github", halo_tests::corpus::Document::GitHub.json()),
    ] {
        let file = write(&dir, &format!("{name}.json"), &document.to_string());
        let layer = halo_axum::HaloBuilder::from_openapi_json(document)
            .build()
            .expect("the document compiles");
        let server = spawn(axum::Router::new().layer(layer)).await;
        let served = report_of(&["--json", "lint", &server.base_url()]);
        let read = report_of(&["--json", "lint", "--openapi", &file]);
        assert_eq!(read, served, "{name}");
    }
}

#[test]
fn a_document_that_cannot_be_linted_exits_2() {
    let dir = tempfile::tempdir().unwrap();
    let lint = |path: &str| {
        let run = halo(&["lint", "--openapi", path]).expect(2);
        assert!(run.stdout.is_empty(), "{run:#?}");
        assert!(
            run.stderr
                .starts_with(&format!("halo: cannot lint {path}: ")),
            "{run:#?}"
        );
        run.stderr
    };

    let missing = dir.path().join("missing.json");
    let stderr = lint(missing.to_str().unwrap());
    assert!(stderr.contains("cannot read it"), "{stderr}");

    let broken = write(&dir, "broken.json", "{\"openapi\": \"3.0.3\", \"paths\": {");
    let stderr = lint(&broken);
    assert!(stderr.contains("it is not JSON: "), "{stderr}");
    assert!(stderr.contains("line 1"), "{stderr}");

    let yaml = write(
        &dir,
        "pets.yaml",
        "# The pets API\nopenapi: 3.0.3\ninfo:\n  title: Pets\n  version: 1.0.0\npaths: {}\n",
    );
    let stderr = lint(&yaml);
    assert!(
        stderr.contains("it is YAML, which halo does not read yet"),
        "{stderr}"
    );
    assert!(stderr.contains(&format!("yq -o=json {yaml}")), "{stderr}");

    let swagger = json!({"swagger": "2.0", "info": {"title": "Pets", "version": "1"}, "paths": {}});
    let stderr = lint(&write(&dir, "swagger.json", &swagger.to_string()));
    assert!(stderr.contains("Swagger \"2.0\" document"), "{stderr}");
    assert!(stderr.contains("OpenAPI 3.0 and 3.1"), "{stderr}");

    let other = lint(&write(&dir, "package.json", r#"{"name": "pets"}"#));
    assert!(other.contains("not an OpenAPI document"), "{other}");

    // A document that does not compile: the compiler's message, naming the operation.
    let mut dangling = pets_document(false);
    dangling["paths"]["/pets"]["get"]["parameters"][0]["schema"] =
        json!({"$ref": "#/components/schemas/Species"});
    let stderr = lint(&write(&dir, "dangling.json", &dangling.to_string()));
    assert!(stderr.contains("GET /pets"), "{stderr}");
    assert!(stderr.contains("#/components/schemas/Species"), "{stderr}");
}

#[test]
fn stripes_document_is_linted_whole_offline() {
    use halo_tests::corpus::Document;

    let text = Document::Stripe.text();
    let compiled = halo_openapi::Registry::builder(&serde_json::from_str(&text).unwrap())
        .build()
        .expect("Stripe's document compiles")
        .tools()
        .count();
    let dir = tempfile::tempdir().unwrap();
    let stripe = write(&dir, "stripe.json", &text);
    // No server is asked: proxies that lead nowhere would fail any request that were made.
    let closed = "http://127.0.0.1:9";
    let env = [
        ("HTTP_PROXY", closed),
        ("HTTPS_PROXY", closed),
        ("ALL_PROXY", closed),
    ];
    let started = std::time::Instant::now();
    let run = common::halo_with_env(&["--json", "lint", "--openapi", &stripe], &env);
    assert!(matches!(run.code, 0 | 1), "{}: {}", run.code, run.stderr);
    let report = run.json();
    assert_eq!(report["api"], "Stripe API", "{}", report["api"]);
    assert_eq!(report["tools_checked"].as_u64(), Some(compiled as u64));
    assert!(compiled > 400, "{compiled} tools");
    let findings = report["findings"].as_array().unwrap().len() as u64;
    assert_eq!(
        report["errors"].as_u64().unwrap() + report["warnings"].as_u64().unwrap(),
        findings
    );
    eprintln!(
        "stripe: {compiled} tools, {} errors, {} warnings in {:?}",
        report["errors"],
        report["warnings"],
        started.elapsed()
    );
}
