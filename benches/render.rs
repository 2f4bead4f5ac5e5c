//! Rendering parser speed (docs/protocol.md §3). Prints numbers, asserts
//! nothing about time. Run: `cargo bench --bench render`.

use kijito_protocol::ids::{MemoryId, Persona};
use kijito_protocol::render;
use std::hint::black_box;
use std::time::Instant;

fn rendering(content_bytes: usize) -> String {
    let mut content = String::with_capacity(content_bytes);
    for c in "lorem ipsum dolor sit amet · 雪\n".chars().cycle() {
        if content.len() + c.len_utf8() > content_bytes {
            break;
        }
        content.push(c);
    }
    format!(
        "Memory [21813]\nType: fact\nScope: project\nProject: Codex\nPersona: codex\nStatus: active\nSource: mcp\n\
         Created: 2026-07-25 00:00:00\nImportance: 0.9\nbelief: confidence=0.95 evidence=9 basis=observed\n\
         edges:\n  related → [1] preview\n  has_more=true\n\
         ⟦UNTRUSTED id=21813 src=persona:codex trust=memory-content n=4c7d2e⟧\n{content}\n⟦/UNTRUSTED n=4c7d2e⟧"
    )
}

fn measure(name: &str, bytes: usize, iterations: u32, mut f: impl FnMut()) {
    f();
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    let per = start.elapsed() / iterations;
    let mib_s = if per.as_nanos() > 0 { bytes as f64 / per.as_secs_f64() / (1024.0 * 1024.0) } else { f64::INFINITY };
    println!("{name:<40} {bytes:>8} B  {:>10.2} µs/op  {mib_s:>8.0} MiB/s", per.as_secs_f64() * 1e6);
}

fn main() {
    let id = MemoryId::new(21813).expect("id");
    let persona = Persona::default();
    measure("run_known_bad_control", render::KNOWN_BAD_CONTROL.len(), 20_000, || {
        black_box(render::run_known_bad_control()).expect("control");
    });
    for size in [256, 64 * 1024, 1024 * 1024 - 600] {
        let text = rendering(size);
        measure(&format!("parse_and_classify (content {size})"), text.len(), if size > 100_000 { 200 } else { 5_000 }, || {
            black_box(render::parse_and_classify(black_box(&text), id, Some(&persona))).expect("valid");
        });
        measure(&format!("parse + content_digest (content {size})"), text.len(), if size > 100_000 { 100 } else { 2_000 }, || {
            let (r, _) = render::parse_and_classify(black_box(&text), id, Some(&persona)).expect("valid");
            black_box(render::content_digest(&r));
        });
    }
    let over = "x".repeat(render::MAX_RENDERING_BYTES + 1);
    measure("reject over 1 MiB", over.len(), 100_000, || {
        black_box(render::parse_rendering(black_box(&over), id, Some(&persona))).expect_err("too large");
    });
}
