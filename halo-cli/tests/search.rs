//! `halo search` against the sample bookstore over real HTTP: the best match first, one line
//! per tool or a JSON array, the tag filter and the limit (with how many matched on standard
//! error), and usage errors. The assertions hold whether the bookstore ranks `?q=` itself or
//! answers its whole manifest and `halo` ranks it.

use crate::common;

use std::sync::OnceLock;

use common::{Run, halo, serve};

/// The bookstore on `127.0.0.1:<free port>`, for as long as the test process lives.
fn server() -> &'static str {
    static BASE: OnceLock<String> = OnceLock::new();
    BASE.get_or_init(|| serve(bookstore::app()))
}

/// `halo --bearer demo-admin ARGS`: the bookstore's admin, who may see every tool.
fn halo_as_admin(args: &[&str]) -> Run {
    let mut all = vec!["--bearer", "demo-admin"];
    all.extend_from_slice(args);
    halo(&all)
}

/// The names in `--json` output, best first.
fn names(run: &Run) -> Vec<String> {
    run.json()
        .as_array()
        .expect("an array")
        .iter()
        .map(|tool| tool["name"].as_str().expect("a name").to_owned())
        .collect()
}

#[test]
fn the_best_match_comes_first() {
    let run = halo_as_admin(&["search", server(), "what is the weather like"]).expect(0);
    let first = run.stdout.lines().next().expect("a line per tool");
    let cells: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(
        cells[..3],
        ["get_weather", "GET", "/api/weather"],
        "{run:#?}"
    );

    let json = halo_as_admin(&["search", server(), "weather", "--json"]).expect(0);
    assert_eq!(names(&json)[0], "get_weather");
    let entry = &json.json()[0];
    assert_eq!(entry["method"], "GET");
    assert_eq!(entry["url"], "/api/weather");
    assert!(entry["tags"].is_array(), "{entry}");

    // An order is found by what it does, not only by its name.
    let order = halo_as_admin(&["search", server(), "order books", "--json"]).expect(0);
    let found = names(&order);
    assert!(
        found[..3].iter().any(|name| name.contains("order")),
        "{found:?}"
    );
}

#[test]
fn tags_and_limit() {
    let all = halo_as_admin(&["search", server(), "book", "--json"]).expect(0);
    let every = names(&all);
    assert!(every.len() >= 3, "{every:?}");
    assert!(all.stderr.is_empty(), "{all:#?}");

    let one = halo_as_admin(&["search", server(), "book", "--limit", "1", "--json"]).expect(0);
    assert_eq!(names(&one).len(), 1);
    assert!(
        one.stderr
            .contains(&format!("1 of {} matching tools shown", every.len())),
        "{one:#?}"
    );

    let orders = halo_as_admin(&["search", server(), "book", "--tags", "orders", "--json"])
        .expect(0)
        .json();
    for tool in orders.as_array().expect("an array") {
        let tags = halo_tests::json::strings(&tool["tags"]);
        assert!(tags.contains(&"orders"), "{tool}");
    }

    let nothing = halo_as_admin(&["search", server(), "kubernetes cluster"]).expect(0);
    assert!(nothing.stdout.is_empty(), "{nothing:#?}");
    assert!(nothing.stderr.contains("no tool matches"), "{nothing:#?}");
}

#[test]
fn only_what_the_caller_may_see_is_found() {
    // Without credentials, the bookstore lists only its public tools.
    let public = halo(&["search", server(), "create order", "--json"]).expect(0);
    assert!(
        !names(&public).iter().any(|name| name == "create_order"),
        "{public:#?}"
    );
}

#[test]
fn usage_errors_exit_2() {
    for limit in ["0", "101", "many"] {
        let run = halo(&["search", server(), "book", "--limit", limit]).expect(2);
        assert!(run.stderr.contains("--limit"), "{run:#?}");
    }
    halo(&["search", server()]).expect(2);
    let blank = halo(&["search", server(), "   "]).expect(2);
    assert!(blank.stderr.contains("query"), "{blank:#?}");
}
