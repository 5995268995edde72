//! The bookstore's playground in a real browser: `tests/browser/playground.mjs` drives
//! Debian's Chromium headless through playwright-core against the bookstore on loopback. It
//! lists the tools without and with credentials, filters by a tag on the server, calls the
//! streaming `summarize_book` and sees its progress live and then its result, sees a `422`
//! problem with its pointer, input refused before sending, a header and a JSON array placed,
//! and checks that no request left the server. A screenshot goes to `target/playground.png`.
//!
//! Needs Node.js (`HALO_NODE`, or `node` on `PATH`), Chromium (`HALO_CHROMIUM`, or
//! `/usr/bin/chromium`) and `tests/browser/node_modules` (`npm ci` there); `bash .ci/test`
//! provides all three.

use std::path::{Path, PathBuf};
use std::time::Duration;

use halo_tests::{spawn, workspace_root};
use tokio::process::Command;

/// A browser start and a dozen interactions; a hang fails the run instead.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(180);

/// Node.js: `HALO_NODE` when set, else `node` on `PATH`.
fn node() -> PathBuf {
    if let Some(path) = std::env::var_os("HALO_NODE").filter(|path| !path.is_empty()) {
        let path = PathBuf::from(path);
        assert!(
            path.is_file(),
            "HALO_NODE={} does not exist",
            path.display()
        );
        return path;
    }
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "Node.js is not on PATH: install it (apt-get install nodejs npm) or set HALO_NODE \
                 to a node binary (20 or newer); `bash .ci/test` checks for it"
            )
        })
}

/// Chromium: `HALO_CHROMIUM` when set, else Debian's `/usr/bin/chromium`.
fn chromium() -> PathBuf {
    let path = std::env::var_os("HALO_CHROMIUM")
        .filter(|path| !path.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "Chromium is missing at {}: install it (apt-get install --no-install-recommends chromium, \
         which `bash .ci/test` does as root) or set HALO_CHROMIUM to a Chromium or Chrome binary",
        path.display()
    );
    path
}

/// `tests/browser`, with its npm dependencies installed.
fn browser_tests() -> PathBuf {
    let dir = workspace_root().join("tests").join("browser");
    let installed = dir
        .join("node_modules")
        .join("playwright-core")
        .join("package.json");
    assert!(
        installed.is_file(),
        "playwright-core is not installed in {}: run `npm ci` there (`bash .ci/test` does)",
        dir.display()
    );
    dir
}

fn show(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_playground_lists_filters_and_streams_in_chromium() {
    let (node, chromium, dir) = (node(), chromium(), browser_tests());
    let server = spawn(bookstore::app()).await;
    let screenshot = workspace_root().join("target").join("playground.png");
    let _ = std::fs::remove_file(&screenshot);

    let run = Command::new(&node)
        .arg(Path::new("playground.mjs"))
        .arg(server.url("/playground"))
        .current_dir(&dir)
        .env("HALO_CHROMIUM", &chromium)
        .env("PLAYGROUND_SCREENSHOT", &screenshot)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(SCRIPT_TIMEOUT, run)
        .await
        .unwrap_or_else(|_| panic!("the browser test took longer than {SCRIPT_TIMEOUT:?}"))
        .unwrap_or_else(|error| panic!("cannot run {}: {error}", node.display()));
    assert!(
        output.status.success(),
        "the browser test failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        show(&output.stdout),
        show(&output.stderr)
    );
    let written = std::fs::metadata(&screenshot)
        .unwrap_or_else(|error| panic!("no screenshot at {}: {error}", screenshot.display()));
    assert!(written.len() > 0, "an empty screenshot");
}
