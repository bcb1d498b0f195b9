//! The one way every handler reads a request body: bounded. A declared
//! `Content-Length` over the limit is refused before anything is read; a
//! body without one (chunked) is read chunk by chunk, each chunk's length
//! checked in JavaScript before it is copied into wasm memory, and reading
//! stops at the first chunk that would take the body over the limit. So a
//! refused body costs the isolate's memory at most the limit (wasm memory
//! never shrinks: a 32 MiB body read whole and then refused would keep the
//! isolate 32 MiB bigger for good).

use js_sys::{Reflect, Uint8Array};
use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{Request, web_sys};

use crate::error::{Code, HttpError, HttpResult};

/// Reads `req`'s body, at most `max` bytes; beyond, `code` (a 413) and
/// nothing more is read. A request without a body reads as empty.
pub async fn read(req: &Request, max: usize, code: Code) -> HttpResult<Vec<u8>> {
    let too_large = |what: String| too_large(code, &what, max);
    let declared = req.headers().get("content-length").ok().flatten().and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(len) = declared.filter(|&len| len > max as u64) {
        return Err(too_large(len.to_string()));
    }
    let Some(stream) = req.inner().body() else { return Ok(Vec::new()) };
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut body = Vec::with_capacity(declared.map_or(0, |len| usize::try_from(len).unwrap_or(0)));
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(worker::Error::from)?;
        if Reflect::get(&chunk, &"done".into()).map_err(worker::Error::from)?.as_bool().unwrap_or(true) {
            return Ok(body);
        }
        let bytes: Uint8Array = Reflect::get(&chunk, &"value".into()).map_err(worker::Error::from)?.unchecked_into();
        let len = bytes.length() as usize;
        if body.len().saturating_add(len) > max {
            // Not copied in: the rest of the body is never read.
            let _ = reader.cancel();
            return Err(too_large(format!("more than {max}")));
        }
        let start = body.len();
        // Grow by doubling, but never past the limit: a refused body costs
        // at most the limit, an accepted one at most its own length twice.
        let capacity = (start + len).max(body.capacity().saturating_mul(2).min(max));
        body.reserve_exact(capacity - start);
        body.resize(start + len, 0);
        if let Some(dst) = body.get_mut(start..) {
            bytes.copy_to(dst);
        }
    }
}

/// A body of `what` bytes is refused (`code`): at most `max` are allowed.
pub fn too_large(code: Code, what: &str, max: usize) -> HttpError {
    HttpError::new(code, format!("the body has {what} bytes; at most {max} are allowed"))
}
