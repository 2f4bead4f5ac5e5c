//! `kijito-local view`: a read-only web viewer of the flight recorder
//! (docs/kijito-local.md, *view*): the sessions, a session's timeline with
//! its context chart, and (given `--db`) the pointer, a memory and a search
//! of the FTS index. Server-rendered HTML, everything embedded (no build
//! step, no CDN); live updates by Server-Sent Events.
//!
//! Security: loopback only ([`crate::parse_listen`]; a `Host` header that
//! is not a loopback name is refused); a random per-launch secret in the
//! printed URL (`/?k=SECRET`) is exchanged for an HttpOnly, SameSite=Strict
//! cookie; only GET is served (any other method: 405, nothing is written);
//! a strict Content-Security-Policy (scripts and styles only from this
//! server, no inline code); every text from a memory, a command summary or
//! a journal field is HTML-escaped; pages are bounded ([`MAX_ROWS`]); the
//! API bearer token is never read.

use crate::http::{self, Conn, Request};
use crate::report;
use crate::store::Store;
use kijito_files::journal;
use kijito_protocol::ids::SessionId;
use kijito_protocol::{Error, Result};
use serde_json::{json, Value};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Stable codes of the viewer.
pub mod codes {
    kijito_protocol::codes! {
        DB_MISSING DbMissing = "view_db_missing",
    }
}

/// The cookie that proves the secret was shown.
pub const COOKIE: &str = "kijito_view";
/// Timeline rows rendered at most (the newest are kept).
pub const MAX_ROWS: usize = 2000;
/// Most simultaneous connections.
pub const MAX_CONNECTIONS: usize = 32;
/// How long one event stream stays open (the browser reconnects).
pub const STREAM_FOR: Duration = Duration::from_secs(300);
/// How often an event stream looks at the journal.
pub const STREAM_POLL: Duration = Duration::from_millis(200);
/// Results of a search.
const SEARCH_LIMIT: usize = 20;

/// The Content-Security-Policy of every answer.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

const CSS: &str = include_str!("view/view.css");
const JS: &str = include_str!("view/live.js");

/// What `kijito-local view` serves.
#[derive(Debug, Clone)]
pub struct Options {
    pub listen: SocketAddr,
    pub data_dir: PathBuf,
    pub db: Option<PathBuf>,
    /// The configured pointer (the pointer page).
    pub pointer_id: Option<u64>,
}

struct App {
    data: PathBuf,
    store: Option<Store>,
    pointer_id: Option<u64>,
    secret: String,
    cookie: String,
}

/// A bound viewer.
pub struct Viewer {
    listener: TcpListener,
    app: Arc<App>,
    stopping: Arc<AtomicBool>,
}

impl Viewer {
    pub fn bind(o: &Options) -> Result<Viewer> {
        let store = match &o.db {
            None => None,
            Some(p) => {
                // Never create a database: the viewer writes nothing.
                if std::fs::symlink_metadata(p).is_err() {
                    return Err(Error::new(codes::DB_MISSING, format!("{} does not exist", p.display())));
                }
                Some(Store::open(p)?)
            }
        };
        let listener =
            TcpListener::bind(o.listen).map_err(|e| Error::new(crate::codes::BIND, format!("cannot listen on {}: {e}", o.listen)))?;
        let app = App {
            data: o.data_dir.clone(),
            store,
            pointer_id: o.pointer_id,
            secret: kijito_files::random::hex(16),
            cookie: kijito_files::random::hex(16),
        };
        Ok(Viewer { listener, app: Arc::new(app), stopping: Arc::new(AtomicBool::new(false)) })
    }

    /// The URL to open: the address and the per-launch secret.
    pub fn url(&self) -> Result<String> {
        let addr = self.listener.local_addr().map_err(|e| Error::new(crate::codes::BIND, e.to_string()))?;
        Ok(format!("http://{addr}/?k={}", self.app.secret))
    }

    /// Serve until the process ends.
    pub fn run(self) -> Result<()> {
        let active = Arc::new(AtomicUsize::new(0));
        for stream in self.listener.incoming() {
            let Ok(stream) = stream else { continue };
            if active.load(Ordering::SeqCst) >= MAX_CONNECTIONS {
                if let Ok(mut c) = Conn::new(stream) {
                    let _ = c.write_raw(&page(503, "text/plain; charset=utf-8", b"too many connections", &[]));
                }
                continue;
            }
            active.fetch_add(1, Ordering::SeqCst);
            let (app, stopping, count) = (self.app.clone(), self.stopping.clone(), active.clone());
            let spawned = std::thread::Builder::new().name("kijito-view".into()).stack_size(512 * 1024).spawn(move || {
                serve(&app, stream, &stopping);
                count.fetch_sub(1, Ordering::SeqCst);
            });
            if spawned.is_err() {
                active.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Ok(())
    }
}

/// A whole answer: status line, the fixed security headers, `extra` headers, body.
fn page(status: u16, content_type: &str, body: &[u8], extra: &[(&str, String)]) -> Vec<u8> {
    let mut head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nContent-Security-Policy: {CSP}\r\nX-Content-Type-Options: nosniff\r\nX-Frame-Options: DENY\r\nReferrer-Policy: no-referrer\r\nCache-Control: no-store\r\nConnection: close\r\n",
        http::reason(status),
        body.len()
    );
    for (k, v) in extra {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    let mut out = head.into_bytes();
    out.extend_from_slice(body);
    out
}

fn html(status: u16, body: String) -> Vec<u8> {
    page(status, "text/html; charset=utf-8", body.as_bytes(), &[])
}

fn serve(app: &App, stream: TcpStream, stopping: &AtomicBool) {
    let Ok(mut conn) = Conn::new(stream) else { return };
    let req = match conn.read_request(stopping, true, &|_| true, &|| {}) {
        Ok(r) => r,
        // A write method is refused as such, whatever else is wrong with it.
        Err(http::ReadError::Bad { method: Some(m), .. }) if m != "GET" => {
            let _ = conn.write_raw(&page(405, "text/plain; charset=utf-8", b"read-only viewer: GET only", &[("Allow", "GET".into())]));
            return;
        }
        Err(http::ReadError::Bad { .. }) => {
            let _ = conn.write_raw(&page(400, "text/plain; charset=utf-8", b"bad request", &[]));
            return;
        }
        Err(_) => return,
    };
    if req.method != "GET" {
        let _ = conn.write_raw(&page(405, "text/plain; charset=utf-8", b"read-only viewer: GET only", &[("Allow", "GET".into())]));
        return;
    }
    if !loopback_host(req.header("host")) {
        let _ = conn.write_raw(&page(403, "text/plain; charset=utf-8", b"the Host header must name loopback", &[]));
        return;
    }
    // The secret in the URL becomes the cookie, and the URL loses it.
    if let Some(k) = query_param(&req.query, "k") {
        if same(k.as_bytes(), app.secret.as_bytes()) {
            let cookie = format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", app.cookie);
            let _ = conn.write_raw(&page(303, "text/plain; charset=utf-8", b"", &[("Location", req.path.clone()), ("Set-Cookie", cookie)]));
            return;
        }
    }
    if !has_cookie(&req, &app.cookie) {
        let _ = conn.write_raw(&html(
            401,
            shell("not signed in", "<p>Open the URL <code>kijito-local view</code> printed (it holds this launch's secret).</p>"),
        ));
        return;
    }
    if let Some(rest) = req.path.strip_prefix("/events/") {
        return stream_events(app, &mut conn, rest, &req, stopping);
    }
    let _ = conn.write_raw(&route(app, &req));
}

fn route(app: &App, req: &Request) -> Vec<u8> {
    let path = req.path.as_str();
    match path {
        "/" => html(200, sessions_page(app)),
        "/static/view.css" => page(200, "text/css; charset=utf-8", CSS.as_bytes(), &[]),
        "/static/live.js" => page(200, "text/javascript; charset=utf-8", JS.as_bytes(), &[]),
        "/pointer" => with_store(app, |s| pointer_page(app, s)),
        "/search" => with_store(app, |s| search_page(s, &query_param(&req.query, "q").map(|q| decode(&q)).unwrap_or_default())),
        _ => {
            if let Some(id) = path.strip_prefix("/s/") {
                return match SessionId::parse(id) {
                    Ok(s) => session_page(app, &s),
                    Err(_) => not_found(),
                };
            }
            if let Some(id) = path.strip_prefix("/m/").and_then(|i| i.parse::<u64>().ok()) {
                return with_store(app, |s| memory_page(s, id));
            }
            not_found()
        }
    }
}

fn not_found() -> Vec<u8> {
    html(404, shell("not found", "<p>No such page.</p>"))
}

fn with_store(app: &App, f: impl FnOnce(&Store) -> Vec<u8>) -> Vec<u8> {
    match &app.store {
        Some(s) => f(s),
        None => {
            html(404, shell("no database", "<p>Start the viewer with <code>--db PATH</code> to see the pointer and search memories.</p>"))
        }
    }
}

/// `Host` is a loopback name with a port (or absent, as HTTP/1.0 allows).
fn loopback_host(host: Option<&str>) -> bool {
    let Some(h) = host else { return true };
    let name = match h.rsplit_once(':') {
        Some((n, port)) if port.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => h,
    };
    name == "localhost" || name == "[::1]" || name.parse::<std::net::Ipv4Addr>().is_ok_and(|ip| ip.is_loopback())
}

/// Constant-time equality of two secrets.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn has_cookie(req: &Request, want: &str) -> bool {
    req.headers
        .iter()
        .filter(|(n, _)| n == "cookie")
        .flat_map(|(_, v)| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .any(|(k, v)| k == COOKIE && same(v.as_bytes(), want.as_bytes()))
}

fn query_param(query: &str, name: &str) -> Option<String> {
    query.split('&').filter_map(|kv| kv.split_once('=')).find(|(k, _)| *k == name).map(|(_, v)| v.to_owned())
}

/// Percent-decoding of a query value (`+` is a space), bounded to 256 bytes.
fn decode(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() && out.len() < 256 {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => match u8::from_str_radix(std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz"), 16) {
                Ok(v) => {
                    out.push(v);
                    i += 2;
                }
                Err(_) => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// HTML-escape text for an element or a quoted attribute.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A page: the head (styles and script from this server only) and `body`.
fn shell(title: &str, body: &str) -> String {
    shell_with(title, body, "")
}

fn shell_with(title: &str, body: &str, body_attrs: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>kijito-qa · {}</title><link rel=\"stylesheet\" href=\"/static/view.css\"><script src=\"/static/live.js\" defer></script></head>\n<body{body_attrs}><nav><a href=\"/\">sessions</a> · <a href=\"/pointer\">pointer</a> · <form action=\"/search\" method=\"get\"><input name=\"q\" placeholder=\"search memories\"></form></nav>\n<main>\n<h1>{}</h1>\n{body}\n</main></body></html>\n",
        esc(title),
        esc(title)
    )
}

/// `YYYY-MM-DD HH:MM:SS` UTC.
pub fn datetime(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    // Civil date from days since 1970-01-01 (H. Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {}", report::clock(ms))
}

fn sessions_page(app: &App) -> String {
    let sessions = match report::sessions_overview(&app.data, 500) {
        Ok(s) => s,
        Err(e) => return shell("sessions", &format!("<p class=\"error\">{}: {}</p>", esc(e.code()), esc(e.message()))),
    };
    let mut rows = String::new();
    for s in &sessions {
        let c = &s["compactions"];
        let id = s["session"].as_str().unwrap_or("");
        let waiting = s["waiting"].as_array().map(Vec::len).unwrap_or(0);
        rows.push_str(&format!(
            "<tr class=\"session\" data-session=\"{0}\"><td><a href=\"/s/{0}\">{0}</a></td><td class=\"host\">{1}</td><td>{2}</td><td>{3}</td><td class=\"attested-share\" data-attested=\"{4}\" data-total=\"{5}\">{4}/{5}</td><td class=\"waiting\" data-waiting=\"{6}\">{6}</td><td class=\"chain\">{7}</td></tr>\n",
            esc(id),
            esc(s["host"].as_str().unwrap_or("")),
            s["first_ms"].as_i64().map(datetime).unwrap_or_default(),
            s["last_ms"].as_i64().map(datetime).unwrap_or_default(),
            c["attested"],
            c["total"],
            waiting,
            if s["chain"]["ok"] == true { "intact" } else { "BROKEN" },
        ));
    }
    let body = if sessions.is_empty() {
        format!("<p class=\"empty\">No session journal in {}.</p>", esc(&journal::dir(&app.data).display().to_string()))
    } else {
        format!("<table id=\"sessions\"><thead><tr><th>session</th><th>host</th><th>start</th><th>last event</th><th>attested</th><th>waiting for you</th><th>journal</th></tr></thead><tbody>\n{rows}</tbody></table>")
    };
    shell("sessions", &body)
}

/// The badge of an event that is ATTESTED or not.
fn badge(e: &Value) -> Option<&'static str> {
    match e["kind"].as_str() {
        Some("precompact" | "claim" | "delivery") => Some(if e["attested"] == true { "ATTESTED" } else { "UNATTESTED" }),
        Some("tool_decision") if e["decision"] == "deny" => Some("DENIED"),
        Some("consent_requested") => Some("WAITING"),
        Some("consent_refused") => Some("REFUSED"),
        _ => None,
    }
}

/// One timeline row as the event stream sends it (plain text fields; the
/// page's script puts them in as text, never as HTML).
pub fn row_value(e: &Value) -> Value {
    json!({
        "seq": e["seq"],
        "time": report::clock(e["ts_ms"].as_i64().unwrap_or(0)),
        "kind": e["kind"],
        "badge": badge(e),
        "detail": report::event_detail(e),
    })
}

fn row_html(e: &Value) -> String {
    let kind = e["kind"].as_str().unwrap_or("");
    let badge = badge(e).map(|b| format!("<span class=\"badge {}\">{b}</span>", b.to_ascii_lowercase())).unwrap_or_default();
    format!(
        "<tr class=\"ev\" data-kind=\"{}\" data-seq=\"{}\"><td>{}</td><td>{}</td><td>{badge}</td><td>{}</td></tr>\n",
        esc(kind),
        e["seq"],
        report::clock(e["ts_ms"].as_i64().unwrap_or(0)),
        esc(kind),
        esc(&report::event_detail(e))
    )
}

/// The context ratios as an inline SVG line (0-100 %).
pub fn chart(ratios: &[f64]) -> String {
    if ratios.is_empty() {
        return "<p class=\"chart empty\">No context samples yet (the Stop hook records one per turn when the transcript tells).</p>"
            .into();
    }
    let (w, h) = (600.0, 120.0);
    let step = if ratios.len() > 1 { w / (ratios.len() - 1) as f64 } else { 0.0 };
    let points: Vec<String> =
        ratios.iter().enumerate().map(|(i, r)| format!("{:.1},{:.1}", i as f64 * step, h - r.clamp(0.0, 1.0) * h)).collect();
    format!(
        "<svg id=\"context-chart\" class=\"chart\" viewBox=\"0 0 600 120\" width=\"600\" height=\"120\" role=\"img\" aria-label=\"context usage\" data-samples=\"{}\"><line x1=\"0\" y1=\"24\" x2=\"600\" y2=\"24\" class=\"threshold\"/><polyline points=\"{}\"/></svg>",
        ratios.len(),
        points.join(" ")
    )
}

fn session_page(app: &App, s: &SessionId) -> Vec<u8> {
    let j = match journal::read(&app.data, s) {
        Ok(j) => j,
        Err(_) => return not_found(),
    };
    let v = report::summary(s, &j, None);
    let c = &v["compactions"];
    let reasons = c["unattested_reasons"]
        .as_object()
        .map(|m| m.iter().map(|(k, n)| format!("<li class=\"reason\" data-reason=\"{0}\">{0} ×{n}</li>", esc(k))).collect::<String>())
        .unwrap_or_default();
    let denials = v["denials"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, n)| format!("<li class=\"denial\" data-rule=\"{0}\" data-count=\"{n}\">{0} ×{n}</li>", esc(k)))
                .collect::<String>()
        })
        .unwrap_or_default();
    let waiting = v["waiting"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| {
                    format!(
                        "<li class=\"waiting\" data-what=\"{}\">{} {}</li>",
                        esc(w["what"].as_str().unwrap_or("")),
                        esc(w["what"].as_str().unwrap_or("")),
                        esc(w["summary"].as_str().unwrap_or(""))
                    )
                })
                .collect::<String>()
        })
        .unwrap_or_default();
    let k = &v["consents"];
    let chain = match v["chain"]["break"].as_object() {
        None => format!("<span class=\"badge intact\">chain intact</span> ({} lines)", v["chain"]["lines"]),
        Some(b) => format!("<span class=\"badge broken\">chain BROKEN</span> at line {}", b["line"]),
    };
    let events = v["events"].as_array().map(Vec::as_slice).unwrap_or(&[]);
    let shown = &events[events.len().saturating_sub(MAX_ROWS)..];
    let rows: String = shown.iter().map(row_html).collect();
    let last_seq = events.last().and_then(|e| e["seq"].as_u64()).unwrap_or(0);
    let ratios: Vec<f64> = v["context"].as_array().map(|a| a.iter().filter_map(Value::as_f64).collect()).unwrap_or_default();
    let body = format!(
        "<section class=\"summary\"><dl>\
<dt>host</dt><dd id=\"host\">{host}</dd>\
<dt>duration</dt><dd>{dur} s</dd>\
<dt>compactions</dt><dd id=\"compactions\" data-total=\"{total}\" data-attested=\"{att}\" data-unattested=\"{unatt}\">{total}: <span class=\"badge attested\">ATTESTED {att}</span> <span class=\"badge unattested\">UNATTESTED {unatt}</span><ul class=\"reasons\">{reasons}</ul></dd>\
<dt>consents</dt><dd id=\"consents\" data-requested=\"{kr}\" data-confirmed=\"{kc}\" data-spent=\"{ks}\" data-refused=\"{kf}\">requested {kr}, confirmed {kc}, spent {ks}, refused {kf}</dd>\
<dt>denials</dt><dd><ul id=\"denials\">{denials}</ul>{no_denials}</dd>\
<dt>waiting for you</dt><dd><ul id=\"waiting\">{waiting}</ul>{no_waiting}</dd>\
<dt>latch mode</dt><dd id=\"latch-mode\">{mode}</dd>\
<dt>journal</dt><dd id=\"chain\">{chain}</dd>\
</dl></section>\n<h2>context</h2>\n{chart}\n<h2>timeline</h2>\n{note}<table id=\"timeline\"><thead><tr><th>time (UTC)</th><th>event</th><th></th><th>detail</th></tr></thead><tbody>\n{rows}</tbody></table>",
        host = esc(v["host"].as_str().unwrap_or("")),
        dur = v["duration_ms"].as_i64().unwrap_or(0) / 1000,
        total = c["total"],
        att = c["attested"],
        unatt = c["unattested"],
        kr = k["requested"],
        kc = k["confirmed"],
        ks = k["spent"],
        kf = k["refused"],
        mode = esc(v["latch_mode"].as_str().unwrap_or("unknown")),
        chart = chart(&ratios),
        no_denials = if denials.is_empty() { "none" } else { "" },
        no_waiting = if waiting.is_empty() { "nothing" } else { "" },
        note = if shown.len() < events.len() { format!("<p class=\"note\">The newest {MAX_ROWS} of {} events.</p>", events.len()) } else { String::new() },
    );
    html(200, shell_with(&format!("session {s}"), &body, &format!(" data-session=\"{}\" data-last-seq=\"{last_seq}\"", esc(s.as_str()))))
}

fn memory_html(id: u64, content: &str) -> String {
    format!(
        "<article class=\"memory\" data-id=\"{id}\"><h3><a href=\"/m/{id}\">memory {id}</a></h3><pre>{}</pre></article>\n",
        esc(content)
    )
}

fn pointer_page(app: &App, store: &Store) -> Vec<u8> {
    let Some(id) = app.pointer_id else {
        return html(404, shell("pointer", "<p>No pointer is configured (pointerId in the kijito-qa config).</p>"));
    };
    match store.memory_with_edges(id) {
        Ok(Some((m, edges, more))) => {
            let anchors: String = edges
                .iter()
                .map(|e| {
                    format!(
                        "<li class=\"anchor\" data-id=\"{0}\"><a href=\"/m/{0}\">{0}</a> ({1}) {2}</li>",
                        e.to,
                        esc(&e.kind),
                        esc(&e.preview)
                    )
                })
                .collect();
            let more = if more { "<p class=\"note\">More links than shown.</p>" } else { "" };
            html(
                200,
                shell("pointer", &format!("{}<h2>anchors</h2><ul id=\"anchors\">{anchors}</ul>{more}", memory_html(m.id, &m.content))),
            )
        }
        Ok(None) => html(404, shell("pointer", &format!("<p>Pointer {id} is not in this database.</p>"))),
        Err(e) => html(500, shell("pointer", &format!("<p class=\"error\">{}</p>", esc(e.code())))),
    }
}

fn memory_page(store: &Store, id: u64) -> Vec<u8> {
    match store.memory(id) {
        Ok(Some(m)) => html(200, shell(&format!("memory {id}"), &memory_html(m.id, &m.content))),
        Ok(None) => not_found(),
        Err(e) => html(500, shell("memory", &format!("<p class=\"error\">{}</p>", esc(e.code())))),
    }
}

fn search_page(store: &Store, q: &str) -> Vec<u8> {
    let phrases: Vec<String> = q.split_whitespace().take(8).map(str::to_owned).collect();
    let found = if phrases.is_empty() { Ok(Vec::new()) } else { store.recall(&phrases, None, None, SEARCH_LIMIT) };
    let body = match found {
        Ok(list) => {
            let items: String = list.iter().map(|m| memory_html(m.id, &m.content)).collect();
            format!("<p id=\"query\" data-results=\"{}\">{} result(s) for <q>{}</q></p>\n{items}", list.len(), list.len(), esc(q))
        }
        Err(e) => format!("<p class=\"error\">{}: {}</p>", esc(e.code()), esc(e.message())),
    };
    html(200, shell("search", &body))
}

/// `/events/<session>`: the journal's new lines as Server-Sent Events
/// (`event: line`, `id: <seq>`, data: [`row_value`]), from the `after`
/// query value or the `Last-Event-ID` header; for [`STREAM_FOR`] at most.
fn stream_events(app: &App, conn: &mut Conn, session: &str, req: &Request, stopping: &AtomicBool) {
    let Ok(s) = SessionId::parse(session) else {
        let _ = conn.write_raw(&not_found());
        return;
    };
    let mut after: u64 = query_param(&req.query, "after").and_then(|a| a.parse().ok()).unwrap_or(0);
    if let Some(id) = req.header("last-event-id").and_then(|i| i.parse::<u64>().ok()) {
        after = after.max(id);
    }
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nContent-Security-Policy: {CSP}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\nretry: 1000\n\n"
    );
    if conn.write_raw(head.as_bytes()).is_err() {
        return;
    }
    let start = Instant::now();
    let mut seen_len: Option<u64> = None;
    let mut last_ping = Instant::now();
    while start.elapsed() < STREAM_FOR && !stopping.load(Ordering::SeqCst) {
        let len = std::fs::symlink_metadata(journal::current_file(&app.data, &s)).map(|m| m.len()).ok();
        if len != seen_len {
            seen_len = len;
            if let Ok(j) = journal::read(&app.data, &s) {
                let mut out = String::new();
                let from = after;
                for e in j.events.iter().filter(|e| e["seq"].as_u64().is_some_and(|q| q > from)) {
                    after = e["seq"].as_u64().unwrap_or(after);
                    out.push_str(&format!("id: {after}\nevent: line\ndata: {}\n\n", row_value(e)));
                }
                if !out.is_empty() && conn.write_raw(out.as_bytes()).is_err() {
                    return;
                }
            }
        }
        if last_ping.elapsed() > Duration::from_secs(15) {
            if conn.write_raw(b": ping\n\n").is_err() {
                return;
            }
            last_ping = Instant::now();
        }
        std::thread::sleep(STREAM_POLL);
    }
}

/// The options from the command line's values.
pub fn options(listen: SocketAddr, data_dir: &Path, db: Option<PathBuf>, pointer_id: Option<u64>) -> Options {
    Options { listen, data_dir: data_dir.to_path_buf(), db, pointer_id }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_hosts() {
        assert_eq!(esc("<script>alert('x')</script>&\""), "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;&amp;&quot;");
        for ok in [Some("127.0.0.1:8080"), Some("localhost:1"), Some("[::1]:9"), None] {
            assert!(loopback_host(ok), "{ok:?}");
        }
        for bad in ["evil.example:80", "10.0.0.1:80", "127.0.0.1.evil.example"] {
            assert!(!loopback_host(Some(bad)), "{bad}");
        }
        assert_eq!(decode("a+b%3Cc%3e"), "a b<c>");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(datetime(0), "1970-01-01 00:00:00");
        assert_eq!(datetime(1_796_521_927_474), "2026-12-06 01:52:07");
    }
}
