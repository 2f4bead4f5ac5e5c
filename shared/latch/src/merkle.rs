//! RFC 6962 (RFC 9162 §2.1) Merkle tree over the chain's entries, and
//! consistency proofs between two sizes of it.
//!
//! Leaf `i` is the raw 32-byte SHA-256 of entry `i + 1`'s canonical payload
//! (its `payload_hash`). Leaf hash `SHA-256(0x00 || leaf)`, node hash
//! `SHA-256(0x01 || left || right)`. A checkpoint `(size, root)` taken earlier
//! is consistent with the chain now when the RFC 6962 consistency proof from
//! `size` to the current size verifies: the old history is an unchanged prefix
//! of the new one. Verifying a proof is O(log n) hashes; producing one from the
//! leaves is O(n).

use sha2::{Digest as _, Sha256};

pub type Hash = [u8; 32];

pub fn leaf_hash(leaf: &[u8]) -> Hash {
    let mut h = Sha256::new();
    h.update([0u8]);
    h.update(leaf);
    h.finalize().into()
}

pub fn node_hash(left: &Hash, right: &Hash) -> Hash {
    let mut h = Sha256::new();
    h.update([1u8]);
    h.update(left);
    h.update(right);
    h.finalize().into()
}

/// The largest power of two strictly smaller than `n` (`n >= 2`).
fn split(n: usize) -> usize {
    let mut k = 1;
    while k << 1 < n {
        k <<= 1;
    }
    k
}

/// MTH over already-hashed leaves.
fn mth(hashed: &[Hash]) -> Hash {
    match hashed.len() {
        0 => Sha256::digest([]).into(),
        1 => hashed[0],
        n => {
            let k = split(n);
            node_hash(&mth(&hashed[..k]), &mth(&hashed[k..]))
        }
    }
}

/// The tree head of `leaves` (each a leaf's data).
pub fn root<L: AsRef<[u8]>>(leaves: &[L]) -> Hash {
    let hashed: Vec<Hash> = leaves.iter().map(|l| leaf_hash(l.as_ref())).collect();
    mth(&hashed)
}

fn subproof(m: usize, hashed: &[Hash], complete: bool, out: &mut Vec<Hash>) {
    let n = hashed.len();
    if m == n {
        if !complete {
            out.push(mth(hashed));
        }
        return;
    }
    let k = split(n);
    if m <= k {
        subproof(m, &hashed[..k], complete, out);
        out.push(mth(&hashed[k..]));
    } else {
        subproof(m - k, &hashed[k..], false, out);
        out.push(mth(&hashed[..k]));
    }
}

/// PROOF(m, D[n]) of RFC 6962 §2.1.2; `None` unless `1 <= m <= n`.
pub fn consistency_proof<L: AsRef<[u8]>>(m: usize, leaves: &[L]) -> Option<Vec<Hash>> {
    if m == 0 || m > leaves.len() {
        return None;
    }
    let hashed: Vec<Hash> = leaves.iter().map(|l| leaf_hash(l.as_ref())).collect();
    let mut out = Vec::new();
    subproof(m, &hashed, true, &mut out);
    Some(out)
}

/// RFC 9162 §2.1.4.2: does `proof` show that the tree of size `m` with head
/// `old_root` is a prefix of the tree of size `n` with head `new_root`?
pub fn verify_consistency(m: u64, n: u64, old_root: &Hash, new_root: &Hash, proof: &[Hash]) -> bool {
    if m == 0 || m > n || proof.len() > 128 {
        return false;
    }
    if m == n {
        return proof.is_empty() && old_root == new_root;
    }
    let mut path: Vec<Hash> = Vec::with_capacity(proof.len() + 1);
    if m.is_power_of_two() {
        path.push(*old_root);
    }
    path.extend_from_slice(proof);
    let Some((first, rest)) = path.split_first() else { return false };
    let (mut fnode, mut snode) = (m - 1, n - 1);
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    let (mut fr, mut sr) = (*first, *first);
    for c in rest {
        if snode == 0 {
            return false;
        }
        if fnode & 1 == 1 || fnode == snode {
            fr = node_hash(c, &fr);
            sr = node_hash(c, &sr);
            while fnode & 1 == 0 && fnode != 0 {
                fnode >>= 1;
                snode >>= 1;
            }
        } else {
            sr = node_hash(&sr, c);
        }
        fnode >>= 1;
        snode >>= 1;
    }
    snode == 0 && fr == *old_root && sr == *new_root
}

/// The compact range of a tree: the roots of the perfect subtrees that
/// cover leaves `[0, size)`, largest first (one per set bit of `size`).
/// Appending a leaf is O(log n); the tree head is their right fold. Anything
/// read from outside is checked by folding it to a trusted root.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontier {
    size: u64,
    nodes: Vec<Hash>,
}

impl Frontier {
    pub fn new() -> Frontier {
        Frontier::default()
    }

    /// From stored parts; `None` unless there is one node per set bit.
    pub fn from_parts(size: u64, nodes: Vec<Hash>) -> Option<Frontier> {
        (nodes.len() == size.count_ones() as usize).then_some(Frontier { size, nodes })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn nodes(&self) -> &[Hash] {
        &self.nodes
    }

    /// Append one leaf given its data (a raw payload hash).
    pub fn push(&mut self, leaf: &[u8]) {
        self.push_hashed(leaf_hash(leaf));
    }

    /// Append one already-hashed leaf.
    pub fn push_hashed(&mut self, h: Hash) {
        self.nodes.push(h);
        self.size += 1;
        for _ in 0..self.size.trailing_zeros() {
            let (Some(r), Some(l)) = (self.nodes.pop(), self.nodes.pop()) else { return };
            self.nodes.push(node_hash(&l, &r));
        }
    }

    /// The tree head (RFC 6962 MTH) of the leaves pushed so far.
    pub fn root(&self) -> Hash {
        let mut it = self.nodes.iter().rev();
        let Some(last) = it.next() else { return Sha256::digest([]).into() };
        it.fold(*last, |acc, left| node_hash(left, &acc))
    }

    /// `(start, len)` of each node, in order.
    fn ranges(&self) -> impl Iterator<Item = (u64, u64, &Hash)> {
        let mut start = 0u64;
        let size = self.size;
        (0..64u32).rev().filter(move |b| size >> b & 1 == 1).zip(self.nodes.iter()).map(move |(b, h)| {
            let s = start;
            start += 1u64 << b;
            (s, 1u64 << b, h)
        })
    }
}

/// PROOF(m, D[n]) of RFC 6962 from the compact range of the first `m`
/// leaves and the hashed leaves `m..n` only: O(log m + (n - m) log n) hash
/// operations, no access to the first `m` leaves. `None` when a needed node
/// is not available (cannot happen for a well-formed frontier; tested
/// against [`consistency_proof`]) or `m == 0`.
pub fn consistency_proof_extending(old: &Frontier, new_hashed: &[Hash]) -> Option<Vec<Hash>> {
    let m = old.size;
    let n = m + new_hashed.len() as u64;
    if m == 0 {
        return None;
    }
    let node = |a: u64, b: u64| -> Option<Hash> {
        if b <= m {
            old.ranges().find(|(s, len, _)| *s == a && s + len == b).map(|(_, _, h)| *h)
        } else if a >= m {
            Some(mth(&new_hashed[(a - m) as usize..(b - m) as usize]))
        } else {
            None
        }
    };
    fn sub(m: u64, a: u64, n: u64, complete: bool, node: &dyn Fn(u64, u64) -> Option<Hash>, out: &mut Vec<Hash>) -> Option<()> {
        if m == n {
            if !complete {
                out.push(node(a, a + n)?);
            }
            return Some(());
        }
        let k = split(n as usize) as u64;
        if m <= k {
            sub(m, a, k, complete, node, out)?;
            out.push(node(a + k, a + n)?);
        } else {
            sub(m - k, a + k, n - k, false, node, out)?;
            out.push(node(a, a + k)?);
        }
        Some(())
    }
    let mut out = Vec::new();
    sub(m, 0, n, true, &node, &mut out)?;
    Some(out)
}

pub fn hex(h: &Hash) -> String {
    h.iter().map(|b| format!("{b:02x}")).collect()
}

/// Parse 64 lowercase hex characters.
pub fn parse_hex(s: &str) -> Option<Hash> {
    if s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(n: usize) -> Vec<Vec<u8>> {
        (0..n).map(|i| format!("leaf {i}").into_bytes()).collect()
    }

    /// RFC 6962 test vectors (certificate-transparency-go, merkle tree tests):
    /// the roots of the first 1..8 of the reference leaves.
    #[test]
    fn roots_match_the_reference_vectors() {
        let data: [&[u8]; 8] = [
            b"",
            b"\x00",
            b"\x10",
            b"\x20\x21",
            b"\x30\x31",
            b"\x40\x41\x42\x43",
            b"\x50\x51\x52\x53\x54\x55\x56\x57",
            b"\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f",
        ];
        let want = [
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
            "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
            "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
            "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
            "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
            "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
            "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
            "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
        ];
        for n in 1..=8 {
            assert_eq!(hex(&root(&data[..n])), want[n - 1], "size {n}");
        }
        assert_eq!(hex(&root::<&[u8]>(&[])), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }

    #[test]
    fn every_consistency_proof_verifies_and_a_changed_history_does_not() {
        let all = leaves(40);
        for n in 1..=all.len() {
            let new_root = root(&all[..n]);
            for m in 1..=n {
                let old_root = root(&all[..m]);
                let proof = consistency_proof(m, &all[..n]).unwrap();
                assert!(proof.len() <= 2 * 6 + 2, "O(log n): {m} {n} {}", proof.len());
                assert!(verify_consistency(m as u64, n as u64, &old_root, &new_root, &proof), "{m} -> {n}");
                if m < n {
                    // a different old history (one leaf changed) is refused
                    let mut other = all[..m].to_vec();
                    other[m - 1] = b"rewritten".to_vec();
                    assert!(!verify_consistency(m as u64, n as u64, &root(&other), &new_root, &proof), "{m} -> {n}");
                    // the proof does not carry over to a longer tree's head
                    if n < all.len() {
                        assert!(!verify_consistency(m as u64, n as u64 + 1, &old_root, &root(&all[..n + 1]), &proof), "{m} -> {n}+1");
                    }
                    if !proof.is_empty() {
                        let mut bad = proof.clone();
                        bad[0][0] ^= 1;
                        assert!(!verify_consistency(m as u64, n as u64, &old_root, &new_root, &bad));
                    }
                }
            }
        }
        assert!(consistency_proof(0, &all).is_none() && consistency_proof(41, &all).is_none());
        assert!(!verify_consistency(0, 3, &[0; 32], &[0; 32], &[]));
    }

    #[test]
    fn hex_round_trips() {
        let h = root(&leaves(3));
        assert_eq!(parse_hex(&hex(&h)), Some(h));
        assert_eq!(parse_hex("AB"), None);
    }
    #[test]
    fn the_frontier_gives_every_root_and_every_proof_without_the_old_leaves() {
        let all = leaves(70);
        let hashed: Vec<Hash> = all.iter().map(|l| leaf_hash(l)).collect();
        let mut f = Frontier::new();
        assert_eq!(f.root(), root::<Vec<u8>>(&[]));
        for n in 1..=all.len() {
            f.push(&all[n - 1]);
            assert_eq!(f.root(), root(&all[..n]), "root {n}");
            assert_eq!(Frontier::from_parts(f.size(), f.nodes().to_vec()).as_ref(), Some(&f));
        }
        assert!(Frontier::from_parts(3, vec![[0; 32]]).is_none());
        let mut old = Frontier::new();
        for m in 1..=all.len() {
            old.push(&all[m - 1]);
            for n in m..=all.len() {
                let want = consistency_proof(m, &all[..n]).unwrap();
                let got = consistency_proof_extending(&old, &hashed[m..n]).unwrap();
                assert_eq!(got, want, "{m} -> {n}");
            }
        }
        assert!(consistency_proof_extending(&Frontier::new(), &hashed).is_none());
    }
}
