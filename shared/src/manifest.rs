//! TEMPORARY stand-in (branch wip/gate): the real module lands from another
//! branch and replaces this file at merge. Only the two functions the gate
//! needs, with the agreed signatures.

use crate::ids::{Digest, MemoryId, MessageId};

/// Compact JSON as JavaScript `JSON.stringify` prints it, keys in the
/// value's order.
pub fn canonical_json(value: &serde_json::Value) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// SHA-256 of `{"pointerId":<n>,"pointerDigest":"<d>","lockMessageId":<m>,"anchors":[{"id":<a>,"sha256":"<d>"},...]}`.
pub fn snapshot_digest(pointer_id: MemoryId, pointer_digest: &Digest, lock_message_id: MessageId, anchors: &[(MemoryId, Digest)]) -> Digest {
    let anchors: Vec<String> = anchors.iter().map(|(id, d)| format!("{{\"id\":{id},\"sha256\":\"{d}\"}}")).collect();
    let text = format!(
        "{{\"pointerId\":{pointer_id},\"pointerDigest\":\"{pointer_digest}\",\"lockMessageId\":{lock_message_id},\"anchors\":[{}]}}",
        anchors.join(",")
    );
    Digest::of(text.as_bytes())
}
