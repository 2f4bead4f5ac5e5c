//! Reading memories the way every verifier and the publisher must: fetch,
//! parse the rendering (section 3), classify its lifecycle, digest its exact
//! content. The pointer must carry the configured persona's fence; an anchor's
//! fence may name any persona (its header must agree, see `render`).

use crate::http::{Api, Transport};
use kijito_protocol::error::Result;
use kijito_protocol::ids::{Digest, MemoryId};
use kijito_protocol::render::{self, Lifecycle};

/// One memory as read from the service.
#[derive(Debug, Clone)]
pub struct MemoryRead {
    pub content: String,
    pub digest: Digest,
    pub lifecycle: Lifecycle,
    /// The `ETag` a self-hosted server sent (raw header value), if any.
    pub etag: Option<String>,
}

impl MemoryRead {
    pub fn is_current(&self) -> bool {
        self.lifecycle == Lifecycle::Current
    }
}

/// Fetch and classify the pointer (fence of the configured persona).
pub fn read_pointer<T: Transport>(api: &Api<T>, id: MemoryId) -> Result<MemoryRead> {
    read(api, id, true)
}

/// Fetch and classify an anchor (fence of any persona).
pub fn read_anchor<T: Transport>(api: &Api<T>, id: MemoryId) -> Result<MemoryRead> {
    read(api, id, false)
}

fn read<T: Transport>(api: &Api<T>, id: MemoryId, own_persona: bool) -> Result<MemoryRead> {
    let fetched = api.get_memory(id)?;
    let persona = own_persona.then_some(&api.persona);
    let (rendering, lifecycle) = render::parse_and_classify(&fetched.rendering, id, persona)?;
    Ok(MemoryRead { digest: render::content_digest(&rendering), content: rendering.content, lifecycle, etag: fetched.etag })
}

/// The pointer's content digest only (what `pointer-digest` prints): the
/// fence rules apply, the lifecycle does not.
pub fn pointer_digest<T: Transport>(api: &Api<T>, id: MemoryId) -> Result<Digest> {
    let fetched = api.get_memory(id)?;
    let rendering = render::parse_rendering(&fetched.rendering, id, Some(&api.persona))?;
    Ok(render::content_digest(&rendering))
}

/// The live pointer digest through the configured client (config file,
/// optional token file): what `qa-gate record` reads once before it records.
pub fn live_pointer_digest(id: MemoryId, token_file: Option<&kijito_protocol::ids::AbsPath>) -> Result<Digest> {
    let api = crate::http::connect_configured(token_file)?;
    pointer_digest(&api, id)
}
