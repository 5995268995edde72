//! The `halo` binary against the sample bookstore, over real HTTP.

use crate::common;

use std::collections::HashSet;
use std::path::Path;
use std::sync::OnceLock;

use common::{Run, halo, halo_with_env, serve};
use halo_tests::json::strings;
use serde_json::{Value, json};

/// The bookstore on `127.0.0.1:<free port>`, served by a background thread with its own
/// runtime for as long as the test process lives.
fn server() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| serve(bookstore::app()))
}

/// `host:port` of the server.
fn authority() -> &'static str {
    server().trim_start_matches("http://")
}

/// `halo --bearer demo-admin ARGS`: the bookstore's admin, who may see and call every tool.
fn halo_as_admin(args: &[&str]) -> Run {
    let mut all = vec!["--bearer", "demo-admin"];
    all.extend_from_slice(args);
    halo(&all)
}

/// The tools the bookstore shows to callers without credentials.
const PUBLIC: [&str; 4] = [
    "get_book",
    "get_weather",
    "legacy_search_books",
    "search_books",
];

fn write(dir: &Path, name: &str, contents: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write a file");
    path.to_str().expect("a UTF-8 path").to_owned()
}

fn names(tools: &Value) -> Vec<String> {
    tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn discover_prints_a_table_of_every_tool() {
    let run = halo_as_admin(&["discover", server()]).expect(0);
    let mut lines = run.stdout.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("Bookstore 1.2.0: A bookstore"),
        "{run:#?}"
    );
    let header = lines.next().unwrap();
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(columns, ["METHOD", "URL", "NAME", "TAGS", "DESCRIPTION"]);
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 15, "{run:#?}");
    let get_book = rows
        .iter()
        .find(|row| row.contains(" get_book "))
        .expect("get_book is listed");
    let cells: Vec<&str> = get_book.split_whitespace().collect();
    assert_eq!(
        cells[..4],
        ["GET", "/api/books/{id}", "get_book", "books,read"]
    );
    assert!(run.stderr.is_empty(), "{run:#?}");

    // Without credentials, only the public tools are listed.
    let anonymous = halo(&["discover", server()]).expect(0);
    let mut listed: Vec<&str> = anonymous
        .stdout
        .lines()
        .skip(2)
        .map(|row| row.split_whitespace().nth(2).expect("a NAME cell"))
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, PUBLIC, "{anonymous:#?}");
}

#[test]
fn an_oauth_client_from_a_credentials_file_gets_its_token() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    // The bookstore, plus a token endpoint that grants its admin token to one client.
    let issued = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&issued);
    let token = move |headers: axum::http::HeaderMap| {
        let counter = Arc::clone(&counter);
        async move {
            // Basic base64("cli-agent:s3cret").
            let client = headers.get("authorization").and_then(|v| v.to_str().ok());
            if client != Some("Basic Y2xpLWFnZW50OnMzY3JldA==") {
                return (
                    axum::http::StatusCode::UNAUTHORIZED,
                    axum::Json(json!({"error": "invalid_client"})),
                );
            }
            counter.fetch_add(1, Ordering::SeqCst);
            let granted = json!({"access_token": "demo-admin", "token_type": "Bearer",
                                 "expires_in": 300});
            (axum::http::StatusCode::OK, axum::Json(granted))
        }
    };
    let base = serve(bookstore::app().route("/oauth/token", axum::routing::post(token)));
    let host = base.trim_start_matches("http://");
    let file = |secret: &str| {
        let path =
            std::env::temp_dir().join(format!("halo-oauth-{}-{secret}.json", std::process::id()));
        let entry = json!({host: {"type": "oauth", "token_url": format!("{base}/oauth/token"),
                                  "client_id": "cli-agent", "client_secret": secret,
                                  "scopes": ["books:write"]}});
        std::fs::write(&path, entry.to_string()).expect("write the credentials file");
        path.to_str().expect("a UTF-8 path").to_owned()
    };

    let granted = file("s3cret");
    let run = halo(&["--credentials", &granted, "discover", &base, "--json"]).expect(0);
    let tools = run.json()["tools"].as_array().unwrap().len();
    assert!(tools > PUBLIC.len(), "the admin's tools: {run:#?}");
    assert_eq!(issued.load(Ordering::SeqCst), 1);

    // The same client from flags, its secret from the environment.
    let token_url = format!("{base}/oauth/token");
    let flags = [
        "--oauth-token-url",
        token_url.as_str(),
        "--oauth-client-id",
        "cli-agent",
        "--oauth-scope",
        "books:write",
        "discover",
        &base,
        "--json",
    ];
    let run = halo_with_env(&flags, &[("HALO_OAUTH_CLIENT_SECRET", "s3cret")]).expect(0);
    assert_eq!(run.json()["tools"].as_array().unwrap().len(), tools);
    assert_eq!(issued.load(Ordering::SeqCst), 2);
    // Without its secret the flags are a usage error.
    let run = halo(&flags).expect(2);
    assert!(run.stderr.contains("--oauth-client-secret"), "{run:#?}");

    let refused = file("n0t-th3-s3cret");
    let run = halo(&["--credentials", &refused, "discover", &base]).expect(2);
    assert!(
        run.stderr.contains("invalid_client") && !run.stderr.contains("n0t-th3-s3cret"),
        "{run:#?}"
    );
    for path in [granted, refused] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn discover_filters_by_tags_and_prints_json() {
    let all = halo_as_admin(&["discover", server(), "--json"])
        .expect(0)
        .json();
    assert_eq!(all["api"], "Bookstore");
    assert_eq!(names(&all).len(), 15);

    let payments = halo_as_admin(&["--json", "discover", server(), "--tags", "payments"])
        .expect(0)
        .json();
    assert_eq!(names(&payments), ["charge_payment", "refund_payment"]);
    // Tags filter what the caller may see: no payment tool is public.
    let no_payments = halo(&["--json", "discover", server(), "--tags", "payments"])
        .expect(0)
        .json();
    assert_eq!(no_payments["tools"], json!([]), "{no_payments}");
    let reader = halo(&["--bearer", "demo-reader", "discover", server(), "--json"])
        .expect(0)
        .json();
    let mut readable = names(&reader);
    readable.sort_unstable();
    let mut expected: Vec<&str> = PUBLIC.to_vec();
    expected.extend(["get_order", "summarize_book"]);
    expected.sort_unstable();
    assert_eq!(readable, expected);

    let either = halo_as_admin(&[
        "discover",
        server(),
        "--tags",
        "payments,inventory",
        "--json",
    ])
    .expect(0)
    .json();
    assert_eq!(names(&either).len(), 5);
    for tool in either["tools"].as_array().unwrap() {
        let tags = tool["tags"].as_array().unwrap();
        assert!(
            tags.contains(&json!("payments")) || tags.contains(&json!("inventory")),
            "{tool}"
        );
    }

    let table = halo(&["discover", server(), "--tags", "weather"]).expect(0);
    assert_eq!(table.stdout.lines().count(), 3, "{table:#?}");
    assert!(table.stdout.contains("get_weather"));
}

#[test]
fn describe_a_concrete_path_of_a_template() {
    let run = halo_as_admin(&["describe", server(), "/api/books/1"]).expect(0);
    for method in [
        "GET /api/books/{id}",
        "PUT /api/books/{id}",
        "DELETE /api/books/{id}",
    ] {
        assert!(run.stdout.contains(method), "{method}: {run:#?}");
    }
    assert!(run.stdout.contains("why:"), "{run:#?}");
    assert!(
        run.stdout
            .contains("auth:      bearer (scopes: books:write)"),
        "{run:#?}"
    );
    let id_row = run
        .stdout
        .lines()
        .find(|line| line.trim_start().starts_with("id "))
        .expect("the id input");
    let cells: Vec<&str> = id_row.split_whitespace().collect();
    assert_eq!(cells[..4], ["id", "path", "integer", "yes"]);

    let methods = |schemas: &Value| -> Vec<String> {
        schemas
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["call"]["method"].as_str().unwrap().to_owned())
            .collect()
    };
    let all = halo_as_admin(&["describe", server(), "/api/books/1", "--json"])
        .expect(0)
        .json();
    assert_eq!(methods(&all), ["GET", "PUT", "DELETE"]);

    // Without credentials the path describes only what the caller may call.
    let public = halo(&["describe", server(), "/api/books/1", "--json"])
        .expect(0)
        .json();
    assert_eq!(methods(&public), ["GET"]);
    let hidden = halo(&["describe", server(), "/api/books/{id}", "-X", "DELETE"]).expect(1);
    assert!(
        hidden
            .stderr
            .contains("not described: /api/books/{id} describes GET but not DELETE"),
        "{hidden:#?}"
    );
    assert!(hidden.stdout.is_empty(), "{hidden:#?}");

    let one = halo_as_admin(&[
        "describe",
        server(),
        "/api/books/{id}",
        "--method",
        "delete",
        "--json",
    ])
    .expect(0)
    .json();
    assert_eq!(
        one["call"],
        json!({"method": "DELETE", "url": "/api/books/{id}"})
    );
    assert_eq!(one["effects"]["reversible"], false);

    let readable = halo(&["describe", server(), "/api/books/search", "-X", "GET"]).expect(0);
    assert!(
        readable
            .stdout
            .contains("status:    deprecated; sunset: 2027-06-30; use instead: /api/books"),
        "{readable:#?}"
    );
}

#[test]
fn describe_an_unknown_path_or_method() {
    let missing = halo(&["describe", server(), "/api/nope"]).expect(1);
    assert!(
        missing.stderr.contains("404 Not Found") || missing.stderr.contains("not described"),
        "{missing:#?}"
    );
    assert!(missing.stdout.is_empty(), "{missing:#?}");
    let wrong_method = halo(&["describe", server(), "/api/weather", "-X", "POST"]).expect(1);
    assert!(
        wrong_method.stderr.contains("describes GET but not POST"),
        "{wrong_method:#?}"
    );
    let bad_method = halo(&["describe", server(), "/api/weather", "-X", "G T"]).expect(2);
    assert!(
        bad_method.stderr.contains("is not an HTTP method"),
        "{bad_method:#?}"
    );
}

#[test]
fn call_a_get_with_a_path_parameter() {
    let concrete = halo(&["call", server(), "/api/books/1", "--method", "GET"]).expect(0);
    assert!(concrete.stdout.starts_with("200 OK\n"), "{concrete:#?}");
    let body: Value = serde_json::from_str(concrete.stdout.trim_start_matches("200 OK\n"))
        .expect("a pretty JSON body");
    assert_eq!(body["title"], "Dune");

    let templated = halo(&[
        "call",
        server(),
        "/api/books/{id}",
        "-X",
        "GET",
        "--data",
        r#"{"id": 1}"#,
        "--json",
    ])
    .expect(0)
    .json();
    assert_eq!(templated["title"], "Dune");

    // One method at the path: no --method needed. Query parameters go in the query.
    let weather = halo(&[
        "call",
        server(),
        "/api/weather",
        "-d",
        r#"{"city": "Lisbon"}"#,
    ])
    .expect(0);
    assert!(
        weather.stdout.contains(r#""city": "Lisbon""#),
        "{weather:#?}"
    );

    // Several methods: the choice is the caller's.
    let ambiguous = halo_as_admin(&["call", server(), "/api/books/1"]).expect(2);
    assert!(
        ambiguous.stderr.contains("GET, PUT, DELETE") && ambiguous.stderr.contains("--method"),
        "{ambiguous:#?}"
    );
    // Without credentials only GET is described there, so it needs no --method.
    let only_get = halo(&["call", server(), "/api/books/1", "--json"])
        .expect(0)
        .json();
    assert_eq!(only_get["title"], "Dune");

    let missing = halo(&["call", server(), "/api/books/999999", "-X", "GET"]).expect(1);
    assert!(missing.stderr.contains("404 Not Found"), "{missing:#?}");
    assert!(
        missing.stderr.contains("no book has the id 999999"),
        "{missing:#?}"
    );
}

#[test]
fn call_a_post_with_and_without_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let book = json!({
        "title": "A Book Written by a Test", "author": "A. Test",
        "isbn": "9791234567896", "price": 9.5, "published_year": 1969, "pages": 304
    });
    let file = write(dir.path(), "book.json", &book.to_string());
    let data = format!("@{file}");

    // Without credentials, or with read-only ones, creating a book is not described to the
    // caller at all: the call stops at its description, before anything is sent.
    let post = [
        "call",
        server(),
        "/api/books",
        "-X",
        "POST",
        "--data",
        &data,
    ];
    for credentials in [&[][..], &["--bearer", "demo-reader"]] {
        for json in [&[][..], &["--json"]] {
            let refused = halo(&[credentials, &post[..], json].concat()).expect(1);
            // Without credentials, the message says that some might help.
            let hint = if credentials.is_empty() {
                "; no credentials were sent, and an API may describe an operation only to \
                 callers allowed to call it (try --bearer, --api-key or --credentials)"
            } else {
                ""
            };
            assert_eq!(
                refused.stderr,
                format!("halo: not described: /api/books describes GET but not POST{hint}\n"),
                "{refused:#?}"
            );
            assert!(refused.stdout.is_empty(), "{refused:#?}");
        }
    }

    let wrong_token = "not-the-token-s3cret";
    let rejected = halo(&[
        "--bearer",
        wrong_token,
        "call",
        server(),
        "/api/books",
        "-X",
        "POST",
        "-d",
        &data,
    ])
    .expect(1);
    assert!(
        rejected.stderr.contains("the bearer token is not valid"),
        "{rejected:#?}"
    );
    assert!(
        !rejected.stderr.contains(wrong_token) && !rejected.stdout.contains(wrong_token),
        "{rejected:#?}"
    );

    // Invalid values are refused before the handler, with the fields in error.
    let mut blank = book;
    blank["title"] = json!("   ");
    let blank = blank.to_string();
    let post_blank = ["call", server(), "/api/books", "-X", "POST", "-d", &blank];
    let invalid = halo_as_admin(&post_blank).expect(1);
    assert!(
        invalid
            .stderr
            .starts_with("halo: 422 Unprocessable Entity\n"),
        "{invalid:#?}"
    );
    assert!(invalid.stderr.contains("\n    /title: "), "{invalid:#?}");
    let invalid_json = halo_as_admin(&[&post_blank[..], &["--json"]].concat())
        .expect(1)
        .json();
    assert_eq!(invalid_json["status"], 422);
    let pointers: Vec<&Value> = invalid_json["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|error| &error["pointer"])
        .collect();
    assert_eq!(pointers, [&json!("/title")], "{invalid_json}");

    let created = halo(&[
        "call",
        server(),
        "/api/books",
        "-X",
        "post",
        "--data",
        &data,
        "--bearer",
        "demo-admin",
    ])
    .expect(0);
    assert!(created.stdout.starts_with("201 Created\n"), "{created:#?}");
    assert!(
        created.stdout.contains("Location: /api/books/"),
        "{created:#?}"
    );
    assert!(
        created
            .stdout
            .contains(r#""title": "A Book Written by a Test""#),
        "{created:#?}"
    );
    assert!(!created.stdout.contains("demo-admin"));

    // Invalid values of a public tool: the problem's field errors are listed (a query
    // parameter: 400, as axum's `Query` answers).
    let invalid = halo(&[
        "call",
        server(),
        "/api/books",
        "-X",
        "GET",
        "-d",
        r#"{"limit": 0}"#,
    ])
    .expect(1);
    assert!(
        invalid.stderr.starts_with("halo: 400 Bad Request\n"),
        "{invalid:#?}"
    );
    assert!(
        invalid
            .stderr
            .contains("/limit: 0 is less than the minimum of 1"),
        "{invalid:#?}"
    );
}

#[test]
fn credentials_from_flags_files_and_the_environment() {
    let sku = r#"{"sku": "9780441172719"}"#;
    // Without the key, the stock tools are hidden: not described, and nothing is called.
    let refused = halo(&["call", server(), "/api/inventory/{sku}", "-d", sku]).expect(1);
    assert!(
        refused.stderr.starts_with(
            "halo: not described: /api/inventory/{sku} (404); no credentials were sent"
        ),
        "{refused:#?}"
    );
    assert!(refused.stdout.is_empty(), "{refused:#?}");

    let with_key = [
        "call",
        server(),
        "/api/inventory/{sku}",
        "-d",
        sku,
        "--api-key",
        "demo-key",
    ];
    let stock = halo(&[&with_key[..], &["--json"]].concat())
        .expect(0)
        .json();
    assert_eq!(stock["sku"], "9780441172719");

    let renamed = halo(&[&with_key[..], &["--api-key-header", "X-Other-Key"]].concat()).expect(1);
    // The server reads no key from that header: the caller is anonymous.
    assert!(
        renamed
            .stderr
            .contains("not described: /api/inventory/{sku} (404)"),
        "{renamed:#?}"
    );

    let dir = tempfile::tempdir().unwrap();
    let credentials = json!({
        authority(): {"type": "apikey", "header": "X-API-Key", "value": "${HALO_CLI_TEST_KEY}"}
    });
    let file = write(dir.path(), "credentials.json", &credentials.to_string());
    let from_file = halo_with_env(
        &[
            "--credentials",
            &file,
            "call",
            server(),
            "/api/inventory/9780441172719",
        ],
        &[("HALO_CLI_TEST_KEY", "demo-key")],
    )
    .expect(0);
    assert!(from_file.stdout.starts_with("200 OK"), "{from_file:#?}");

    let unset = halo(&["--credentials", &file, "discover", server()]).expect(2);
    assert!(unset.stderr.contains("HALO_CLI_TEST_KEY"), "{unset:#?}");

    let order = ["call", server(), "/api/orders/1", "-X", "GET"];
    let hidden = halo(&order).expect(1);
    assert!(
        hidden.stderr.contains("not described: /api/orders/1 (404)"),
        "{hidden:#?}"
    );
    // The reader's token from the environment: the order is described and the call reaches
    // the handler, which has no order 1.
    let from_env = halo_with_env(&order, &[("HALO_BEARER", "demo-reader")]).expect(1);
    assert!(
        from_env.stderr.starts_with("halo: 404 Not Found\n")
            && from_env.stderr.contains("no order has the id 1"),
        "{from_env:#?}"
    );
    let discovered = halo_with_env(
        &["discover", server(), "--json"],
        &[("HALO_BEARER", "demo-admin")],
    )
    .expect(0)
    .json();
    assert_eq!(names(&discovered).len(), 15);

    let both = halo(&["--bearer", "t", "--api-key", "k", "discover", server()]).expect(2);
    assert!(both.stderr.contains("cannot be used with"), "{both:#?}");
}

/// An API whose security scheme is an API key in `X-Token`, described to every caller, in
/// front of an app that answers with the key headers it received.
fn token_echo() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| {
        async fn echo(headers: axum::http::HeaderMap) -> axum::Json<Value> {
            let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            axum::Json(json!({
                "x-token": get("x-token"),
                "x-api-key": get("x-api-key"),
                "x-other": get("x-other"),
            }))
        }
        let document = json!({
            "openapi": "3.1.0",
            "info": {"title": "Keys", "version": "1.0.0"},
            "paths": {"/keys": {"get": {
                "operationId": "show_keys",
                "summary": "Show the key headers received.",
                "tags": ["keys", "read"],
                "security": [{"token": []}],
                "responses": {"200": {"description": "The headers",
                    "content": {"application/json": {"schema": {"type": "object"}}}}}
            }}},
            "components": {"securitySchemes": {
                "token": {"type": "apiKey", "in": "header", "name": "X-Token"}
            }}
        });
        let layer = halo_axum::HaloBuilder::from_openapi_json(document)
            .build()
            .expect("a valid document");
        serve(axum::Router::new().fallback(echo).layer(layer))
    })
}

#[test]
fn an_api_key_goes_in_the_header_the_scheme_names() {
    let call = |credentials: &[&str], env: &[(&str, &str)]| {
        let mut args = credentials.to_vec();
        args.extend(["call", token_echo(), "/keys", "--json"]);
        halo_with_env(&args, env).expect(0).json()
    };
    let described = halo(&["describe", token_echo(), "/keys", "--json"])
        .expect(0)
        .json();
    assert_eq!(
        described[0]["auth"],
        json!({"type": "apikey", "header": "X-Token"})
    );

    // No header named: the scheme's, not X-API-Key.
    let token = json!({"x-token": "k", "x-api-key": null, "x-other": null});
    assert_eq!(call(&["--api-key", "k"], &[]), token);
    assert_eq!(call(&[], &[("HALO_API_KEY", "k")]), token);
    // A header named wins.
    assert_eq!(
        call(&["--api-key", "k", "--api-key-header", "X-Other"], &[]),
        json!({"x-token": null, "x-api-key": null, "x-other": "k"})
    );
    // A credentials file entry without a header follows the scheme too; with one, that one.
    let dir = tempfile::tempdir().unwrap();
    let host = token_echo().trim_start_matches("http://");
    for (entry, expected) in [
        (
            json!({"type": "apikey", "value": "f"}),
            json!({"x-token": "f", "x-api-key": null, "x-other": null}),
        ),
        (
            json!({"type": "apikey", "header": "X-API-Key", "value": "f"}),
            json!({"x-token": null, "x-api-key": "f", "x-other": null}),
        ),
    ] {
        let file = write(dir.path(), "keys.json", &json!({host: entry}).to_string());
        assert_eq!(call(&["--credentials", &file], &[]), expected, "{entry}");
    }
}

#[test]
fn export_both_formats() {
    let openai = halo_as_admin(&["export", server(), "--format", "openai"])
        .expect(0)
        .json();
    let openai = openai.as_array().expect("an array");
    assert_eq!(openai.len(), 15);
    let mut seen = HashSet::new();
    for tool in openai {
        assert_eq!(tool["type"], "function");
        let function = &tool["function"];
        let name = function["name"].as_str().unwrap();
        assert!(valid_name(name), "{name}");
        assert!(seen.insert(name.to_owned()), "{name} twice");
        assert_eq!(function["parameters"]["type"], "object");
        assert_eq!(function["parameters"]["additionalProperties"], false);
    }
    let create = openai
        .iter()
        .find(|t| t["function"]["name"] == "create_book")
        .expect("create_book");
    let parameters = &create["function"]["parameters"];
    assert!(parameters["properties"]["title"].get("required").is_none());
    assert!(parameters["properties"]["title"].get("in").is_none());
    assert_eq!(parameters["properties"]["title"]["type"], "string");
    assert!(
        parameters["required"]
            .as_array()
            .unwrap()
            .contains(&json!("title"))
    );
    let description = create["function"]["description"].as_str().unwrap();
    assert!(
        description.starts_with("Use to add a title") && description.contains("\n\nAdd a book"),
        "{description}"
    );

    let orders = [
        "export",
        server(),
        "--format",
        "anthropic",
        "--tags",
        "orders",
    ];
    let anthropic = halo_as_admin(&orders).expect(0).json();
    let anthropic = anthropic.as_array().expect("an array");
    let names: Vec<&str> = anthropic
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["create_order", "get_order"]);
    for tool in anthropic {
        assert_eq!(tool["input_schema"]["type"], "object");
        assert!(tool.get("type").is_none());
    }
    let order = &anthropic[0]["input_schema"];
    assert_eq!(order["required"], json!(["customer_email", "items"]));
    assert_eq!(order["properties"]["items"]["type"], "array");

    // Each caller exports the tools it may call.
    let public = halo(&["export", server(), "--format", "openai"])
        .expect(0)
        .json();
    let mut exported: Vec<&str> = public
        .as_array()
        .expect("an array")
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    exported.sort_unstable();
    assert_eq!(exported, PUBLIC);
    let reader = halo(&[&["--bearer", "demo-reader"][..], &orders].concat())
        .expect(0)
        .json();
    assert_eq!(reader.as_array().unwrap().len(), 1, "{reader}");
    assert_eq!(reader[0]["name"], "get_order");

    let unknown = halo(&["export", server(), "--format", "gemini"]).expect(2);
    assert!(unknown.stderr.contains("openai"), "{unknown:#?}");
}

fn valid_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[test]
fn pin_then_diff() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bookstore.pin.json");
    let out = path.to_str().unwrap();

    let printed = halo_as_admin(&["pin", server()]).expect(0).json();
    assert_eq!(printed["api"], "Bookstore");
    assert_eq!(printed["version"], "1.2.0");
    let tools = printed["tools"].as_object().unwrap();
    assert_eq!(tools.len(), 15);
    assert_eq!(tools["GET /api/books/{id}"]["name"], "get_book");
    let hash = tools["GET /api/books/{id}"]["hash"].as_str().unwrap();
    assert_eq!(hash.len(), 64);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));

    let written = halo_as_admin(&["pin", server(), "--out", out]).expect(0);
    assert!(written.stdout.contains("pinned 15 tools"), "{written:#?}");
    let pin: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(pin, printed, "pins of an unchanged API are identical");

    let same = halo_as_admin(&["diff", server(), out]).expect(0);
    assert!(same.stdout.contains("no change from the pin"), "{same:#?}");
    let same_json = halo_as_admin(&["diff", server(), out, "--json"])
        .expect(0)
        .json();
    assert_eq!(
        same_json,
        json!({"added": [], "removed": [], "changed": []})
    );

    // Compared by a caller who sees less, the hidden tools look removed; the public ones
    // are unchanged.
    let anonymous = halo(&["diff", server(), out, "--json"]).expect(1).json();
    assert_eq!(anonymous["added"], json!([]), "{anonymous}");
    assert_eq!(anonymous["changed"], json!([]), "{anonymous}");
    let removed = anonymous["removed"].as_array().unwrap();
    assert_eq!(removed.len(), 15 - PUBLIC.len(), "{anonymous}");
    assert!(removed.contains(&json!("POST /api/books")), "{anonymous}");
    assert!(
        !removed.contains(&json!("GET /api/books/{id}")),
        "{anonymous}"
    );

    // Someone reviewed a different API: one tool unknown to it, one gone, one changed.
    let mut doctored = pin;
    let tools = doctored["tools"].as_object_mut().unwrap();
    tools.remove("POST /api/payments/{id}/refund");
    tools.insert(
        "DELETE /api/everything".into(),
        json!({"name": "delete_everything", "hash": "0".repeat(64)}),
    );
    tools["GET /api/books/{id}"]["hash"] = json!("f".repeat(64));
    let doctored_path = write(dir.path(), "doctored.json", &doctored.to_string());

    let changed = halo_as_admin(&["diff", server(), &doctored_path]).expect(1);
    let lines: Vec<&str> = changed.stdout.lines().collect();
    let row = |sign: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|line| line.starts_with(sign))
            .unwrap_or_else(|| panic!("no {sign} row: {changed:#?}"))
            .split_whitespace()
            .collect()
    };
    assert_eq!(
        row("+"),
        [
            "+",
            "POST",
            "/api/payments/{id}/refund",
            "refund_payment",
            "added"
        ]
    );
    assert_eq!(
        row("-"),
        [
            "-",
            "DELETE",
            "/api/everything",
            "delete_everything",
            "removed"
        ]
    );
    assert_eq!(
        row("~"),
        ["~", "GET", "/api/books/{id}", "get_book", "changed"]
    );

    let changed_json = halo_as_admin(&["diff", server(), &doctored_path, "--json"])
        .expect(1)
        .json();
    assert_eq!(
        changed_json,
        json!({
            "added": ["POST /api/payments/{id}/refund"],
            "removed": ["DELETE /api/everything"],
            "changed": ["GET /api/books/{id}"]
        })
    );

    // A pin taken with tags is compared with the same selection.
    let tagged = dir.path().join("tagged.json");
    halo(&[
        "pin",
        server(),
        "--tags",
        "weather",
        "-o",
        tagged.to_str().unwrap(),
    ])
    .expect(0);
    let tagged_pin: Value =
        serde_json::from_str(&std::fs::read_to_string(&tagged).unwrap()).unwrap();
    assert_eq!(tagged_pin["tags"], json!(["weather"]));
    assert_eq!(tagged_pin["tools"].as_object().unwrap().len(), 1);
    halo(&["diff", server(), tagged.to_str().unwrap()]).expect(0);

    let not_a_pin = write(dir.path(), "not-a-pin.json", "[1, 2]");
    let refused = halo(&["diff", server(), &not_a_pin]).expect(2);
    assert!(refused.stderr.contains("is not a pin"), "{refused:#?}");
    let absent = halo(&["diff", server(), "/nonexistent/pin.json"]).expect(2);
    assert!(absent.stderr.contains("cannot read"), "{absent:#?}");
}

#[test]
fn bad_urls_and_unreachable_servers_exit_2() {
    let no_scheme = halo(&["discover", "not a url"]).expect(2);
    assert!(no_scheme.stderr.starts_with("halo: "), "{no_scheme:#?}");
    assert!(no_scheme.stdout.is_empty());
    halo(&["discover", "ftp://example.com"]).expect(2);

    // A port nobody listens on.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let closed = format!("http://127.0.0.1:{port}");
    let unreachable = halo(&["--timeout", "5", "discover", &closed]).expect(2);
    assert!(
        unreachable.stderr.contains("could not connect"),
        "{unreachable:#?}"
    );
}

#[test]
fn usage_errors_exit_2() {
    halo(&[]).expect(2);
    halo(&["discover"]).expect(2);
    halo(&["frobnicate", server()]).expect(2);
    halo(&["--timeout", "soon", "discover", server()]).expect(2);
    halo(&[
        "--api-key",
        "k",
        "--api-key-header",
        "bad header",
        "discover",
        server(),
    ])
    .expect(2);
    let bad_json = halo(&["call", server(), "/api/weather", "-d", "{city"]).expect(2);
    assert!(
        bad_json.stderr.contains("--data is not JSON"),
        "{bad_json:#?}"
    );
    let not_object = halo(&["call", server(), "/api/weather", "-d", "[1]"]).expect(2);
    assert!(not_object.stderr.contains("JSON object"), "{not_object:#?}");
    let help = halo(&["--help"]).expect(0);
    assert!(help.stdout.contains("discover"), "{help:#?}");
    // Secrets from the environment are never shown in help.
    let env_help = halo_with_env(&["--help"], &[("HALO_BEARER", "hidden-s3cret")]).expect(0);
    assert!(!env_help.stdout.contains("hidden-s3cret"), "{env_help:#?}");
}

/// Stripe's document (form bodies with `deepObject` encodings) behind the layer, in front of
/// an app that answers with what it received.
fn stripe_echo() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| {
        async fn echo(headers: axum::http::HeaderMap, body: String) -> axum::Json<Value> {
            let content_type = headers.get("content-type").and_then(|v| v.to_str().ok());
            axum::Json(json!({"content_type": content_type, "body": body}))
        }
        let document = halo_tests::corpus::Document::Stripe.json();
        let layer = halo_axum::HaloBuilder::from_openapi_json(document)
            .validate(halo_axum::Validation::On)
            .build()
            .expect("Stripe's document builds");
        serve(axum::Router::new().fallback(echo).layer(layer))
    })
}

#[test]
fn call_sends_a_form_body_as_the_document_encodes_it() {
    let echoed = halo(&[
        "call",
        stripe_echo(),
        "/v1/customers",
        "-X",
        "POST",
        "-d",
        r#"{"email": "ada@example.com", "metadata": {"order": "42"}, "expand": ["tax"]}"#,
        "--json",
    ])
    .expect(0)
    .json();
    assert_eq!(echoed["content_type"], "application/x-www-form-urlencoded");
    // The fields in the order of the arguments' JSON object (serde_json's map).
    let mut fields: Vec<&str> = echoed["body"].as_str().unwrap().split('&').collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "email=ada%40example.com",
            "expand%5B0%5D=tax",
            "metadata%5Border%5D=42"
        ]
    );
}

/// An API of 150 tools in five domains (30 each), from a generated OpenAPI document behind
/// the layer: more than OpenAI takes in one request.
fn many_tools() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| {
        let domains = ["books", "orders", "payments", "users", "stock"];
        let mut paths = serde_json::Map::new();
        for i in 0..150 {
            let domain = domains[i % domains.len()];
            paths.insert(
                format!("/{domain}/{i}"),
                json!({"get": {
                    "operationId": format!("get_{domain}_{i}"),
                    "summary": format!("Get {domain} record {i}"),
                    "tags": [domain, "read"],
                    "parameters": [{
                        "name": "fields", "in": "query", "description": "Fields to return",
                        "schema": {"type": "string", "maxLength": 50}
                    }],
                    "responses": {"200": {"description": "The record"}}
                }}),
            );
        }
        let document = json!({
            "openapi": "3.1.0",
            "info": {"title": "Many", "version": "1.0.0"},
            "paths": paths
        });
        let layer = halo_axum::HaloBuilder::from_openapi_json(document)
            .build()
            .expect("the generated document builds");
        serve(
            axum::Router::new()
                .fallback(|| async { axum::Json(json!({})) })
                .layer(layer),
        )
    })
}

/// `halo export <the API of many tools> --format FORMAT ARGS`.
fn export_many(format: &str, args: &[&str]) -> Run {
    halo(&[&["export", many_tools(), "--format", format][..], args].concat())
}

/// The function names of an OpenAI export, in order.
fn function_names(tools: &Value) -> Vec<String> {
    tools
        .as_array()
        .expect("an array")
        .iter()
        .map(|tool| {
            tool["function"]["name"]
                .as_str()
                .expect("a name")
                .to_owned()
        })
        .collect()
}

#[test]
fn export_within_each_vendors_limits() {
    // 150 functions are more than OpenAI takes: the error says how many, and what fixes it.
    let over = export_many("openai", &[]).expect(2);
    assert!(over.stdout.is_empty(), "{over:#?}");
    for needle in [
        "150 tools",
        "at most 128",
        "--tags",
        "--q",
        "--max",
        "--defer",
    ] {
        assert!(over.stderr.contains(needle), "{needle}: {over:#?}");
    }

    // Deferred behind OpenAI's tool search: one namespace per domain tag.
    let deferred = export_many("openai", &["--defer"]).expect(0);
    assert!(deferred.stderr.contains("150 tools"), "{deferred:#?}");
    let tools = deferred.json();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 6, "five namespaces and the tool search tool");
    assert_eq!(tools[5], json!({"type": "tool_search"}));
    for namespace in &tools[..5] {
        assert_eq!(namespace["type"], "namespace");
        assert!(
            namespace["description"]
                .as_str()
                .unwrap()
                .contains("30 tools")
        );
        let functions = namespace["tools"].as_array().unwrap();
        assert_eq!(functions.len(), 30);
        for function in functions {
            assert_eq!(function["type"], "function");
            assert_eq!(function["defer_loading"], true);
            assert!(valid_name(function["name"].as_str().unwrap()));
            assert_eq!(function["parameters"]["type"], "object");
        }
    }
    assert_eq!(tools[2]["name"], "payments");
    // `--defer=never` is the default for OpenAI.
    export_many("openai", &["--defer=never"]).expect(2);

    // Chosen by a search, the best first.
    let found = export_many("openai", &["--q", "payments record 7", "--max", "10"])
        .expect(0)
        .json();
    let names = function_names(&found);
    assert_eq!(names.len(), 10);
    assert_eq!(names[0], "get_payments_7");
    // Chosen by tag: 30 fit.
    let books = export_many("openai", &["--tags", "books"]).expect(0).json();
    assert_eq!(function_names(&books).len(), 30);
    // Chosen, and still too many.
    let still = export_many("openai", &["--max", "140"]).expect(2);
    assert!(still.stderr.contains("the 140 tools chosen"), "{still:#?}");
    // A budget given is a limit.
    let budget = export_many("openai", &["--tags", "books", "--budget", "100"]).expect(2);
    assert!(budget.stderr.contains("--budget 100"), "{budget:#?}");

    // Anthropic defers above the budget by itself.
    let anthropic = export_many("anthropic", &[]).expect(0);
    let tools = anthropic.json();
    let tools = tools.as_array().unwrap();
    assert_eq!(tools.len(), 151);
    assert_eq!(
        tools[0],
        json!({"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"})
    );
    assert!(tools[1..].iter().all(|tool| tool["defer_loading"] == true));
    assert!(anthropic.stderr.contains("deferred"), "{anthropic:#?}");
    // Below it, nothing changes.
    let few = export_many("anthropic", &["--q", "stock", "--max", "3"]).expect(0);
    let tools = few.json();
    assert_eq!(tools.as_array().unwrap().len(), 3);
    assert!(tools[0].get("defer_loading").is_none(), "{tools}");
    assert!(few.stderr.is_empty(), "{few:#?}");
}

#[test]
fn export_for_openai_strict_mode() {
    let strict = export_many("openai", &["--tags", "users", "--strict"])
        .expect(0)
        .json();
    for tool in strict.as_array().unwrap() {
        let function = &tool["function"];
        assert_eq!(function["strict"], true);
        let parameters = &function["parameters"];
        assert_eq!(parameters["additionalProperties"], false);
        assert_eq!(parameters["required"], json!(["fields"]));
        assert_eq!(
            parameters["properties"]["fields"],
            json!({"type": ["string", "null"],
                   "description": "Fields to return (at most 50 characters)"})
        );
    }
    // The bookstore's tools, nested bodies and all, are strict everywhere.
    let bookstore = halo_as_admin(&["export", server(), "--format", "openai", "--strict"])
        .expect(0)
        .json();
    for tool in bookstore.as_array().unwrap() {
        assert_closed(&tool["function"]["parameters"]);
    }
    let anthropic = export_many("anthropic", &["--strict"]).expect(2);
    assert!(
        anthropic.stderr.contains("--format openai"),
        "{anthropic:#?}"
    );
}

/// Every object of a schema is closed and requires all its properties.
fn assert_closed(schema: &Value) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::Object(properties)) = map.get("properties") {
                assert_eq!(map["additionalProperties"], false, "{schema}");
                let required: HashSet<&str> = strings(&map["required"]).into_iter().collect();
                assert!(
                    properties
                        .keys()
                        .all(|name| required.contains(name.as_str()))
                );
            }
            for keyword in ["default", "minLength", "maxLength", "allOf", "oneOf"] {
                assert!(!map.contains_key(keyword), "{keyword}: {schema}");
            }
            map.values().for_each(assert_closed);
        }
        Value::Array(items) => items.iter().for_each(assert_closed),
        _ => {}
    }
}
