//! The per-anchor deep audit of seed 001 (`kijito-local mcp`'s
//! `kijito_anchor_audit`; docs/kijito-local.md): an anchor's current
//! lifecycle, classified from its protocol §3 rendering by the verifier's own
//! parser (`kijito_protocol::render::parse_and_classify`, as pointer-snapshot
//! and `wake-check --live`), and its correction history. An anchor that was
//! corrected, or carries the eroded or faded marker, is *scarred*: trust it
//! only after reading what corrected it. Pure: the caller reads the store.

use kijito_protocol::ids::MemoryId;

/// What the caller read about one anchor.
#[derive(Debug, Clone)]
pub struct AnchorRecord<'a> {
    pub id: MemoryId,
    /// The anchor's §3 rendering, as `GET /api/memory/{id}` answers it.
    pub rendering: &'a str,
    /// `none`, `eroded` or `faded`.
    pub marker: &'a str,
    pub status: &'a str,
    pub source: &'a str,
    /// Ids of the memories that correct it (oldest first).
    pub corrected_by: &'a [u64],
    /// Ids of the memories it corrects.
    pub corrects: &'a [u64],
}

/// The audit's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Audit {
    /// `current`, `retired`, or `unclassified (<code>)`.
    pub lifecycle: String,
    /// The newest correction of each step, to the latest one.
    pub chain: Vec<u64>,
    /// Why it is scarred (empty: it is not).
    pub scars: Vec<String>,
}

fn ids(v: &[u64], sep: &str) -> String {
    if v.is_empty() {
        "none".to_owned()
    } else {
        v.iter().map(|i| format!("[{i}]")).collect::<Vec<_>>().join(sep)
    }
}

/// Follow the newest correction of each step from `first`, at most `max`
/// steps, never through a cycle or back to `id`; `next(step)` answers the
/// newest memory correcting `step`.
pub fn follow_corrections<E>(
    id: u64,
    first: Option<u64>,
    max: usize,
    mut next: impl FnMut(u64) -> Result<Option<u64>, E>,
) -> Result<Vec<u64>, E> {
    let mut chain: Vec<u64> = Vec::new();
    let mut step = first;
    while let Some(s) = step {
        if chain.len() >= max || chain.contains(&s) || s == id {
            break;
        }
        chain.push(s);
        step = next(s)?;
    }
    Ok(chain)
}

/// Judge one anchor.
pub fn audit(r: &AnchorRecord<'_>, chain: Vec<u64>) -> Audit {
    let lifecycle = match kijito_protocol::render::parse_and_classify(r.rendering, r.id, None) {
        Ok((_, l)) => l.as_str().to_owned(),
        Err(e) => format!("unclassified ({})", e.code()),
    };
    let mut scars = Vec::new();
    if !r.corrected_by.is_empty() {
        scars.push(format!("corrected by {}", ids(r.corrected_by, ", ")));
    }
    if r.marker == "eroded" || r.marker == "faded" {
        scars.push(r.marker.to_owned());
    }
    Audit { lifecycle, chain, scars }
}

impl Audit {
    pub fn scarred(&self) -> bool {
        !self.scars.is_empty()
    }

    /// The text of `kijito_anchor_audit`.
    pub fn text(&self, r: &AnchorRecord<'_>) -> String {
        let latest = match self.chain.last() {
            None => "none".to_owned(),
            Some(last) => format!("[{last}] (chain {})", ids(&self.chain, " -> ")),
        };
        let scarred = if self.scars.is_empty() { "no".to_owned() } else { format!("yes ({})", self.scars.join("; ")) };
        format!(
            "Anchor audit [{id}]\nLifecycle: {lifecycle}\nMarker: {marker}\nStatus: {status}\nSource: {source}\nCorrected by: {corrected}\nLatest correction: {latest}\nCorrects: {corrects}\nScarred: {scarred}",
            id = r.id.get(),
            lifecycle = self.lifecycle,
            marker = r.marker,
            status = r.status,
            source = r.source,
            corrected = ids(r.corrected_by, ", "),
            corrects = ids(r.corrects, ", "),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corrections_are_followed_without_cycles_and_scars_are_named() {
        let next = |s: u64| -> Result<Option<u64>, ()> {
            Ok(match s {
                5 => Some(7),
                7 => Some(5),
                _ => None,
            })
        };
        assert_eq!(follow_corrections(2, Some(5), 64, next), Ok(vec![5, 7]));
        assert_eq!(follow_corrections(2, Some(5), 1, next), Ok(vec![5]));
        assert_eq!(follow_corrections(2, None, 64, next), Ok(vec![]));
        let id = MemoryId::new(2).unwrap();
        let r = AnchorRecord {
            id,
            rendering: "not a rendering",
            marker: "eroded",
            status: "active",
            source: "mcp",
            corrected_by: &[5],
            corrects: &[],
        };
        let a = audit(&r, vec![5, 7]);
        assert!(a.scarred());
        assert!(a.lifecycle.starts_with("unclassified ("), "{}", a.lifecycle);
        assert!(
            a.text(&r).ends_with("\nLatest correction: [7] (chain [5] -> [7])\nCorrects: none\nScarred: yes (corrected by [5]; eroded)"),
            "{}",
            a.text(&r)
        );
        let clean = AnchorRecord { marker: "none", corrected_by: &[], ..r };
        assert!(!audit(&clean, vec![]).scarred());
        assert!(audit(&clean, vec![]).text(&clean).ends_with("Latest correction: none\nCorrects: none\nScarred: no"));
    }
}
