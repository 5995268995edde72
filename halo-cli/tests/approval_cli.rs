//! Approvals from the command line, against the bookstore over real HTTP: `halo call` of a
//! refund (which waits for approval) prints the approval's id on standard error and waits
//! while a concurrent `halo approve` decides, then prints the refund and exits 0; denied with
//! `halo deny --reason`, it exits 1 saying who and why; `halo approvals --json` lists what
//! waits; a reader may not list; withdrawn by its caller, it exits 1 saying so; Ctrl-C
//! (SIGINT) while `halo call` waits withdraws the approval, so the refund never runs, and
//! exits 130.

use crate::common;

use std::io::{BufRead as _, BufReader, Read as _};
use std::process::{Child, ChildStderr, Command, Stdio};

use common::{Run, halo, serve};
use serde_json::{Value, json};

/// `halo --bearer demo-admin ARGS`.
fn admin(args: &[&str]) -> Run {
    let mut all = vec!["--bearer", "demo-admin"];
    all.extend_from_slice(args);
    halo(&all)
}

/// An order of one Dune, paid: the charge's id.
fn paid_charge(base: &str) -> String {
    let order = admin(&[
        "call",
        base,
        "/api/orders",
        "-X",
        "POST",
        "--json",
        "-d",
        r#"{"customer_email": "ada@example.com", "items": [{"book_id": 1, "quantity": 1}]}"#,
    ])
    .expect(0)
    .json();
    let charge = json!({"order_id": order["id"], "amount": order["total"], "currency": "EUR",
                        "payment_method": "pm_card_visa"});
    let paid = admin(&[
        "call",
        base,
        "/api/payments/charge",
        "--json",
        "-d",
        &charge.to_string(),
    ])
    .expect(0)
    .json();
    paid["id"].as_str().expect("a charge id").to_owned()
}

/// A refund of `charge` by the admin, run in the background: the process, and its standard
/// error once the approval's line has been read from it, with that line's id.
fn held_refund(base: &str, charge: &str, json: bool) -> (Child, BufReader<ChildStderr>, String) {
    let args = json!({"id": charge, "reason": "customer returned the book"}).to_string();
    let mut command = Command::new(env!("CARGO_BIN_EXE_halo"));
    command.args([
        "--bearer",
        "demo-admin",
        "call",
        base,
        "/api/payments/{id}/refund",
        "-d",
        &args,
    ]);
    if json {
        command.arg("--json");
    }
    for name in ["HALO_BEARER", "HALO_API_KEY", "HALO_OAUTH_TOKEN_URL"] {
        command.env_remove(name);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run halo call");
    let mut stderr = BufReader::new(child.stderr.take().expect("stderr"));
    // The first line `halo call` writes is the approval it waits for.
    let mut line = String::new();
    stderr.read_line(&mut line).expect("read stderr");
    let id = line
        .strip_prefix("halo: approval ")
        .and_then(|rest| rest.split_once(" pending (tool refund_payment)"))
        .map(|(id, _)| id.to_owned())
        .unwrap_or_else(|| panic!("not an approval line: {line:?}"));
    assert!(line.contains("waiting for a decision"), "{line}");
    (child, stderr, id)
}

/// What the background call left once it ended.
fn finish(mut child: Child, mut stderr: BufReader<ChildStderr>) -> Run {
    let mut stdout = String::new();
    child
        .stdout
        .take()
        .expect("stdout")
        .read_to_string(&mut stdout)
        .expect("read stdout");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).expect("read stderr");
    let status = child.wait().expect("halo call ends");
    Run {
        code: status.code().expect("halo exits, not killed"),
        stdout,
        stderr: rest,
    }
}

#[test]
fn halo_call_waits_while_halo_approve_decides() {
    let base = serve(bookstore::app());
    let charge = paid_charge(&base);
    let (child, stderr, id) = held_refund(&base, &charge, true);

    // The approver sees it, with its id and tool.
    let listed = admin(&["approvals", &base, "--json"]).expect(0).json();
    let listed = listed.as_array().expect("an array");
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["tool"], "refund_payment");
    assert_eq!(listed[0]["state"], "pending");
    let table = admin(&["approvals", &base]).expect(0);
    let row = table.stdout.lines().nth(1).expect("a row");
    assert!(
        row.starts_with(&id) && row.contains("refund_payment"),
        "{table:#?}"
    );

    let approved = admin(&["approve", &base, &id]).expect(0);
    assert!(
        approved.stdout.starts_with(&format!(
            "approval {id} approved by admin; the call answered 200"
        )),
        "{approved:#?}"
    );

    let call = finish(child, stderr).expect(0);
    let refund = call.json();
    assert_eq!(refund["charge_id"], charge.as_str(), "{call:#?}");
    assert_eq!(refund["reason"], "customer returned the book");
    // Decided: nothing waits any more, and a second decision is refused.
    assert_eq!(
        admin(&["approvals", &base, "--json"]).expect(0).json(),
        json!([])
    );
    let again = admin(&["approve", &base, &id]).expect(1);
    assert!(again.stderr.contains("409"), "{again:#?}");
}

#[test]
fn halo_call_exits_1_with_who_and_why_when_denied() {
    let base = serve(bookstore::app());
    let (child, stderr, id) = held_refund(&base, "ch_1", false);

    // The reader may not list nor decide.
    let reader = halo(&["--bearer", "demo-reader", "approvals", &base]).expect(1);
    assert!(reader.stderr.contains("403"), "{reader:#?}");
    halo(&["--bearer", "demo-reader", "deny", &base, &id]).expect(1);
    // Usage errors are 2.
    admin(&["deny", &base]).expect(2);

    let denied = admin(&[
        "deny",
        &base,
        &id,
        "--reason",
        "the charge is disputed",
        "--json",
    ])
    .expect(0)
    .json();
    assert_eq!(denied["state"], "denied");
    assert_eq!(denied["reason"], "the charge is disputed");

    let call = finish(child, stderr).expect(1);
    assert_eq!(call.stdout, "", "{call:#?}");
    assert_eq!(
        call.stderr,
        format!(
            "halo: the call of refund_payment did not run: approval {id} was denied by admin: \
             the charge is disputed\n"
        )
    );
    // Decided: nothing waits any more.
    assert_eq!(
        admin(&["approvals", &base, "--json"]).expect(0).json(),
        Value::Array(vec![])
    );
}

#[test]
fn ctrl_c_while_halo_call_waits_withdraws_the_approval_and_exits_130() {
    let base = serve(bookstore::app());
    let charge = paid_charge(&base);
    // The approval's line is printed once `halo call` listens for Ctrl-C.
    let (child, stderr, id) = held_refund(&base, &charge, false);
    let interrupt = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill -INT");
    assert!(interrupt.success());
    let call = finish(child, stderr);
    assert_eq!(call.code, 130, "{call:#?}");
    assert_eq!(call.stdout, "", "{call:#?}");
    assert_eq!(
        call.stderr,
        format!("halo: interrupted; approval {id} withdrawn: the call will not run\n")
    );
    // Withdrawn: nothing waits, and approving it now is refused, so it never runs.
    assert_eq!(
        admin(&["approvals", &base, "--json"]).expect(0).json(),
        json!([])
    );
    let late = admin(&["approve", &base, &id]).expect(1);
    assert!(late.stderr.contains("cancelled already"), "{late:#?}");
}

#[test]
fn halo_call_exits_1_when_its_caller_withdraws_the_approval() {
    let base = serve(bookstore::app());
    let (child, stderr, id) = held_refund(&base, "ch_1", false);
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    let withdrawn = runtime
        .block_on(async {
            let client = halo_client::Client::builder(base.as_str())
                .credential(halo_client::Credential::bearer("demo-admin"))
                .build()?;
            client.withdraw(&id).await
        })
        .expect("withdrawn");
    assert_eq!(withdrawn.state, halo_client::ApprovalState::Cancelled);
    let call = finish(child, stderr).expect(1);
    assert_eq!(call.stdout, "", "{call:#?}");
    assert_eq!(
        call.stderr,
        format!(
            "halo: the call of refund_payment did not run: approval {id} was withdrawn by admin\n"
        )
    );
}
