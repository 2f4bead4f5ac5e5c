//! The hook's wallet signer recovery runs the installed sibling
//! `memory-latch wallet-recover` (kijito_hooks::latch_wallet::Sibling): a
//! sibling that is absent, hangs, fails or answers anything but one line
//! per digest is an error (`wallet_recovery_failed`), within its time bound.
//! The real sibling's answers are tested in tests/it/memory_latch_wallet.rs.

#![allow(clippy::unwrap_used)]

use kijito_hooks::latch_wallet::Sibling;
use kijito_latch::wallet::{Recoverer, Sig};
use std::path::PathBuf;
use std::time::{Duration, Instant};

fn script(dir: &std::path::Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    kijito_testkit::write_executable(&p, &format!("#!/bin/sh\n{body}\n"), 0o700);
    p
}

#[test]
fn a_sibling_that_is_absent_hangs_fails_or_answers_wrong_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let sig = Sig::parse(&format!("0x{}{}1b", "11".repeat(32), "22".repeat(32))).unwrap();
    let digests = [[7u8; 32], [8u8; 32]];
    let addr = "0x00000000000000000000000000000000000000aa";
    let cases: Vec<(Option<PathBuf>, &str)> = vec![
        (None, "cannot locate"),
        (Some(d.path().join("absent")), "cannot run"),
        (Some(script(d.path(), "hang", "exec sleep 30")), "did not finish in time"),
        (Some(script(d.path(), "fail", &format!("echo {addr}; echo {addr}; exit 3"))), "failed"),
        (Some(script(d.path(), "short", &format!("echo {addr}"))), "malformed"),
        (Some(script(d.path(), "upper", &format!("echo {}; echo none", addr.to_uppercase().replace("0X", "0x")))), "malformed"),
        // more than a pipe holds, never read past the bound: the child blocks, then is killed
        (Some(script(d.path(), "flood", "yes none | head -c 4000000")), "did not finish in time"),
    ];
    for (exe, want) in cases {
        let s = Sibling { exe: exe.clone(), timeout: Duration::from_millis(300) };
        let t = Instant::now();
        let e = s.recover_all(&sig, &digests).unwrap_err();
        assert!(t.elapsed() < Duration::from_secs(5), "{exe:?} took {:?}", t.elapsed());
        assert_eq!(e.code(), "wallet_recovery_failed", "{exe:?}");
        assert!(e.message().contains(want), "{exe:?}: {}", e.message());
    }
    // argv as documented, one answer line per digest, in order
    let log = d.path().join("argv");
    let ok = script(d.path(), "ok", &format!("printf '%s\\n' \"$@\" > {}; echo none; echo {addr}", log.display()));
    let got = Sibling { exe: Some(ok), timeout: Duration::from_secs(5) }.recover_all(&sig, &digests).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0], None);
    assert_eq!(got[1].unwrap().lower(), addr);
    let argv = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        argv,
        format!("wallet-recover\n--signature\n{}\n--digest\n0x{}\n--digest\n0x{}\n", sig.hex(), "07".repeat(32), "08".repeat(32))
    );
}

/// The sibling's stdout is read up to `43 * 128 + 64` bytes: answers that
/// fill the bound exactly are whole, anything after it is never read.
#[test]
fn the_sibling_answer_is_read_up_to_its_bound_exactly() {
    let d = tempfile::tempdir().unwrap();
    let sig = Sig::parse(&format!("0x{}{}1b", "11".repeat(32), "22".repeat(32))).unwrap();
    let addr = "0x00000000000000000000000000000000000000aa";
    // 126 address lines (43 bytes) and 30 `none` lines (5 bytes): 5,568 bytes, then more.
    let body = format!("i=0; while [ $i -lt 126 ]; do echo {addr}; i=$((i+1)); done; i=0; while [ $i -lt 30 ]; do echo none; i=$((i+1)); done; echo past-the-bound");
    let exe = script(d.path(), "full", &body);
    let digests = vec![[7u8; 32]; 156];
    let got = Sibling { exe: Some(exe), timeout: Duration::from_secs(5) }.recover_all(&sig, &digests).unwrap();
    assert_eq!(got.len(), 156);
    assert!(got[..126].iter().all(|a| a.unwrap().lower() == addr));
    assert!(got[126..].iter().all(Option::is_none));
}
