//! Linker-only size savings for the hook binaries, which must stay at most
//! 2,000,000 B each (docs/architecture.md, Binary sizes):
//!
//! - `-z pack-relative-relocs` (DT_RELR): the ~1,400 relative relocations
//!   of a position-independent executable in ~0.5 KB instead of 24 B each
//!   (`.rela.dyn` 36 KB). PIE/ASLR, RELRO and BIND_NOW stay as they are.
//!   Needs glibc >= 2.36 at run time.
//! - `--icf=all` (LLD, the default linker of Rust >= 1.90 on
//!   x86_64-unknown-linux-gnu): identical functions folded into one, as
//!   rustc does on MSVC targets by default (`/OPT:ICF`); Rust gives no
//!   address uniqueness to functions, and no hook code compares function
//!   pointers.
//!
//! Each flag is used only when a probe program linked with it by this
//! same rustc (same linker, same RUSTFLAGS) runs and prints what it should:
//! an older glibc, GNU ld (no `--icf`) or a cross build simply gets the
//! plain link. `KIJITO_HOOKS_PLAIN_LINK=1` turns both off.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const FLAGS: [&str; 2] = ["-Wl,-z,pack-relative-relocs", "-Wl,--icf=all"];

/// Relative relocations (a static of references, a vtable through `dyn`)
/// and two identical functions: wrong relocation or folding shows up as a
/// wrong line or a crash.
const PROBE: &str = r#"
static WORDS: [&str; 3] = ["kijito", "probe", "ok"];
#[inline(never)] fn a(x: u64) -> u64 { x.wrapping_mul(31).rotate_left(7) ^ 0x5a }
#[inline(never)] fn b(x: u64) -> u64 { x.wrapping_mul(31).rotate_left(7) ^ 0x5a }
fn main() {
    let f: [fn(u64) -> u64; 2] = [a, b];
    let d: &dyn std::fmt::Display = &WORDS[2];
    println!("{} {} {} {}", WORDS[0], WORDS[1], d, f[0](std::env::args().count() as u64) == f[1](std::env::args().count() as u64));
}
"#;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KIJITO_HOOKS_PLAIN_LINK");
    if std::env::var_os("KIJITO_HOOKS_PLAIN_LINK").is_some_and(|v| v == "1") {
        return;
    }
    let (Some(out), Some(rustc)) = (std::env::var_os("OUT_DIR").map(PathBuf::from), std::env::var_os("RUSTC")) else { return };
    // The probe must run here: only a native build is probed.
    if std::env::var("TARGET").ok() != std::env::var("HOST").ok() {
        return;
    }
    let src = out.join("link_probe.rs");
    if std::fs::write(&src, PROBE).is_err() {
        return;
    }
    for (i, flag) in FLAGS.iter().enumerate() {
        if probe(&rustc, &src, &out.join(format!("link_probe_{i}")), flag) {
            println!("cargo:rustc-link-arg-bins={flag}");
        } else {
            println!(
                "cargo:warning=kijito-hooks: the linker or libc does not take {flag}; the hook binaries are linked without it (larger)"
            );
        }
    }
}

fn probe(rustc: &std::ffi::OsStr, src: &Path, exe: &Path, flag: &str) -> bool {
    let mut cmd = Command::new(rustc);
    cmd.args(["--edition", "2021", "-C", "opt-level=1", "--crate-name", "link_probe", "--crate-type", "bin"]);
    // The same linker and flags as the real build.
    if let Ok(flags) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\u{1f}').filter(|f| !f.is_empty()));
    }
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        cmd.arg("-C").arg(format!("linker={}", linker.to_string_lossy()));
    }
    cmd.arg("-C").arg(format!("link-arg={flag}")).arg("-o").arg(exe).arg(src);
    let built = cmd.stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success());
    built && Command::new(exe).stderr(Stdio::null()).output().is_ok_and(|o| o.status.success() && o.stdout == b"kijito probe ok true\n")
}
