//! `Replica`: the Durable Object class that will hold one replica of the
//! memory-only KV store. Today it only answers an internal ping, so the
//! binding, the migration and the worker → stub → object path exist and are
//! exercised (`/health?deep=1`) before the protocol lands.
//!
//! Memory-only: nothing is written to Durable Object storage. The runtime
//! discards an idle object's memory (about 10 s without work), so `pings`
//! restarting from 1 is expected, not a bug.

use std::cell::Cell;

use serde::Serialize;
use worker::{DurableObject, Env, Method, Request, Response, Result, State, durable_object};

/// The only path a `Replica` serves. Workers reach it through a stub; the
/// host part is required by the runtime but never resolved.
pub(crate) const PING_URL: &str = "https://replica.internal/internal/ping";
const PING_PATH: &str = "/internal/ping";

/// One replica. Handlers take `&self`, hence interior mutability; no borrow
/// may be held across an `.await` (a `Cell<u64>` cannot be).
#[durable_object]
pub struct Replica {
    state: State,
    /// Pings answered since this instance started (memory-only).
    pings: Cell<u64>,
}

#[derive(Serialize)]
struct Pong {
    ok: bool,
    object: &'static str,
    /// The object's id (hex), to tell instances apart.
    id: String,
    pings: u64,
}

impl DurableObject for Replica {
    fn new(state: State, _env: Env) -> Self {
        Self { state, pings: Cell::new(0) }
    }

    async fn fetch(&self, req: Request) -> Result<Response> {
        let path = req.path();
        match (req.method(), path.as_str()) {
            (Method::Get, PING_PATH) => {
                let pings = self.pings.get().saturating_add(1);
                self.pings.set(pings);
                Response::from_json(&Pong {
                    ok: true,
                    object: "Replica",
                    id: self.state.id().to_string(),
                    pings,
                })
            }
            (method, _) => crate::error(404, "not_found", &format!("Replica has no route for {method} {path}")),
        }
    }
}
