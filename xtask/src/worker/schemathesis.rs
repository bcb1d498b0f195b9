//! Schemathesis (PyPI, pinned) in a project-local virtual environment,
//! run against the Worker on workerd: every response conforms to
//! docs/openapi.json and no generated request gets a 5xx.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, ensure};

use super::Cluster;

/// The pinned version (OpenAPI 3.1 support, the `st run` CLI of 4.x).
const VERSION: &str = "4.32.5";
/// The document the Worker serves at `GET /v1/openapi.json`.
const DOCUMENT: &str = "docs/openapi.json";
/// What the run checks: the server never fails (5xx), and status codes,
/// content types, headers and bodies are the document's.
const CHECKS: &str = "not_a_server_error,status_code_conformance,content_type_conformance,\
                      response_headers_conformance,response_schema_conformance";
/// The server's directory under `target/`.
const SERVER_DIR: &str = "worker-schemathesis";
/// Generated requests per operation: enough to reach every documented
/// error, few enough that the stage takes a minute or two.
const MAX_EXAMPLES: &str = "30";

/// The `st` executable, installing it into `.tools/schemathesis-<v>/` (a
/// Python virtual environment) on first use.
pub fn ensure(root: &Path) -> Result<PathBuf> {
    let venv = root.join(".tools").join(format!("schemathesis-{VERSION}"));
    let st = venv.join("bin").join("st");
    if st.is_file() {
        return Ok(st);
    }
    eprintln!("installing schemathesis {VERSION} into {} (first run only)", venv.display());
    let status = Command::new("python3")
        .arg("-m")
        .arg("venv")
        .arg(&venv)
        .status()
        .context("running python3 -m venv (needs python3 with venv)")?;
    ensure!(status.success(), "python3 -m venv {} failed ({status})", venv.display());
    let status = Command::new(venv.join("bin").join("pip"))
        .args(["install", "--quiet", &format!("schemathesis=={VERSION}")])
        .status()
        .context("running pip install schemathesis")?;
    ensure!(status.success() && st.is_file(), "pip install schemathesis=={VERSION} failed ({status})");
    Ok(st)
}

/// Serves the Worker on workerd (its own `wrangler dev`, fresh state: after
/// the end-to-end suites' load, workerd ran out of file descriptors for
/// wrangler's loopback connections) and runs schemathesis against it with
/// its admin token; whether every check passed.
pub fn run(root: &Path) -> Result<bool> {
    let st = ensure(root)?;
    let mut server = super::serve_for_tests(root, SERVER_DIR, "API contract", super::Inspector::On)?;
    let passed = check(root, &st, &server);
    let panics = server.log_matches(&["panicked at", "RuntimeError: unreachable"]);
    server.stop()?;
    if !panics.is_empty() {
        eprintln!("worker: the worker panicked under schemathesis:\n{}", panics.join("\n"));
    }
    let passed = passed? && panics.is_empty();
    println!("worker: schemathesis {}", if passed { "passed" } else { "FAILED" });
    Ok(passed)
}

fn check(root: &Path, st: &Path, server: &Cluster) -> Result<bool> {
    println!("worker: schemathesis {VERSION} on {DOCUMENT} against {} ({CHECKS})", server.base);
    // Run from the server's directory: schemathesis keeps its cache in
    // `.schemathesis/` under its working directory.
    let document = root.join(DOCUMENT);
    let status = Command::new(st)
        .current_dir(root.join("target").join(SERVER_DIR))
        .arg("run")
        .arg(&document)
        .args(["--url", &server.base, "--checks", CHECKS, "--max-examples", MAX_EXAMPLES])
        .args(["--header", &format!("Authorization: Bearer {}", server.token)])
        .env("SCHEMATHESIS_TELEMETRY", "false")
        .status()
        .context("running schemathesis")?;
    Ok(status.success())
}
