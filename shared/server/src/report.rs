//! `kijito-report` (bins/kijito-report.rs is its thin main) and the summary
//! the viewer shows: what happened in a session, read from nothing but its
//! flight recorder (`kijito_files::journal`, docs/protocol.md §13).
//!
//! The summary is one JSON object (`kijito-report/1`, schema in
//! fixtures/schemas/kijito-report.schema.json); the text report is printed
//! from it, so both always say the same.

use kijito_cli as cli;
use kijito_files::journal::{self, Journal};
use kijito_protocol::argv::{Args, Command, Flag, Tool};
use kijito_protocol::ids::{AbsPath, SessionId};
use kijito_protocol::{Error, Result};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// Stable codes of `kijito-report` (the `flight` area).
pub mod codes {
    kijito_protocol::codes! {
        SINCE_INVALID SinceInvalid = "report_since_invalid",
        NO_JOURNAL NoJournal = "report_no_journal",
        CHAIN_BROKEN ChainBroken = "report_chain_broken",
    }
}

/// The `schema` of the JSON summary.
pub const SCHEMA: &str = "kijito-report/1";

const FLAGS: &[Flag] =
    &[Flag::value("--session"), Flag::switch("--last"), Flag::value("--since"), Flag::switch("--json"), Flag::value("--data-dir")];
const VERIFY_FLAGS: &[Flag] = &[Flag::value("--session"), Flag::switch("--json"), Flag::value("--data-dir")];

pub const TOOL: Tool = Tool {
    name: "kijito-report",
    code_name: "report",
    help: "\
kijito-report [--session ID | --last] [--since 2h] [--json] [--data-dir D]
kijito-report verify [--session ID] [--json] [--data-dir D]

What happened in a session while you were away, from its flight recorder
(<data-dir>/journal/<session>.jsonl; docs/protocol.md, Flight recorder):
a header (host, duration, compactions ATTESTED/UNATTESTED with each reason,
consents, denials by rule, what waits for you now, the latch mode, the
context curve) and the timeline, one line per event. Reads nothing but the
journal files.

  --session ID  the session (default: --last, the most recently written host
                session)
  --since D     only events of the last D (30m, 2h, 1d; units s m h d)
  --json        the summary as one JSON object (schema kijito-report/1)
  --data-dir D  the data dir (default: the config's dataDir, else
                ~/.cache/kijito-qa; a host's hooks use its plugin data dir)

--last skips the journal `user` (what memory-latch recover or approve run by
hand outside every host session recorded) unless it is the only one; a
session's header counts its events since the session started, and
--session user shows them.

verify checks the hash chain of a session (default: the last) and names the
line where it breaks.

Exit 0 ok; 1 failure (kijito_report_failed:<code>; verify: report_chain_broken
with the line); 2 usage.
",
    commands: &[Command { name: "", flags: FLAGS }, Command { name: "verify", flags: VERIFY_FLAGS }],
};

/// The command line.
pub fn run(args: Args) -> Result<i32> {
    let since_ms = args.raw("--since").map(parse_since).transpose()?;
    let flag: Option<AbsPath> = args.optional("--data-dir")?;
    let config = kijito_files::config::Config::load().ok();
    let data = kijito_files::datadir::resolve(flag.as_ref(), None, config.as_ref())?;
    let session = match args.optional::<SessionId>("--session")? {
        Some(s) => s,
        None => last_session(data.as_path())?,
    };
    let j = journal::read(data.as_path(), &session).map_err(|e| Error::new(codes::NO_JOURNAL, e.message().to_owned()))?;
    if args.subcommand == "verify" {
        let v = verify_value(&session, &j);
        let text = if args.has("--json") { format!("{v}\n") } else { verify_text(&v) };
        cli::print_stdout(&text)?;
        return match &j.broken {
            None => Ok(0),
            Some(b) => Err(Error::new(
                codes::CHAIN_BROKEN,
                format!("the chain of session {session} breaks at line {} of {} ({})", b.line, b.file.display(), b.why),
            )
            .with_detail(v["break"].clone())),
        };
    }
    let cutoff = since_ms.map(|d| now_ms() - d);
    let mut s = summary(&session, &j, cutoff);
    add_outside(data.as_path(), &session, &mut s);
    let text = if args.has("--json") { format!("{s}\n") } else { to_text(&s) };
    cli::print_stdout(&text)?;
    Ok(0)
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The most recently written host session of a data dir (the `user`
/// journal only when there is no other).
pub fn last_session(data: &Path) -> Result<SessionId> {
    let all = journal::sessions(data)?;
    all.iter()
        .find(|(s, _)| s.as_str() != journal::USER_SESSION)
        .or_else(|| all.first())
        .map(|(s, _)| s.clone())
        .ok_or_else(|| Error::new(codes::NO_JOURNAL, format!("no session journal in {}", journal::dir(data).display())))
}

/// `outside_sessions` of a host session's summary: the events of the
/// `user` journal (commands run by hand outside every session) since the
/// session's first counted event, when there are any.
pub fn add_outside(data: &Path, session: &SessionId, s: &mut Value) {
    if session.as_str() == journal::USER_SESSION {
        return;
    }
    let Ok(user) = SessionId::parse(journal::USER_SESSION) else { return };
    let Ok(j) = journal::read(data, &user) else { return };
    let from = s["first_ms"].as_i64().unwrap_or(i64::MAX);
    let after: Vec<&Value> = j.events.iter().filter(|e| e["ts_ms"].as_i64().unwrap_or(0) >= from).collect();
    if let (Some(o), Some(last)) = (s.as_object_mut(), after.last()) {
        o.insert(
            "outside_sessions".into(),
            json!({"session": journal::USER_SESSION, "events": after.len(), "last_ms": last["ts_ms"], "chain_ok": j.broken.is_none()}),
        );
    }
}

/// `30m`, `2h`, `1d`, `90s` in milliseconds.
pub fn parse_since(text: &str) -> Result<i64> {
    let bad = || {
        Error::usage(
            codes::SINCE_INVALID,
            format!("--since takes a number and a unit (s, m, h, d), got {:?}", kijito_protocol::ids::clip(text)),
        )
    };
    let (num, unit) = text.split_at(text.len().saturating_sub(1));
    let n: i64 = num.parse().ok().filter(|n| *n > 0 && *n <= 1_000_000).ok_or_else(bad)?;
    let ms = match unit {
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return Err(bad()),
    };
    Ok(n * ms)
}

fn str_of<'a>(e: &'a Value, k: &str) -> &'a str {
    e.get(k).and_then(Value::as_str).unwrap_or("")
}

/// The chain's state as JSON.
pub fn verify_value(session: &SessionId, j: &Journal) -> Value {
    json!({
        "session": session.as_str(),
        "ok": j.broken.is_none(),
        "lines": j.lines,
        "break": j.broken.as_ref().map(|b| json!({"file": b.file.display().to_string(), "line": b.line, "global_line": b.global_line, "why": b.why})),
    })
}

fn verify_text(v: &Value) -> String {
    match v["break"].as_object() {
        None => format!("session {}: chain intact ({} lines)\n", str_of(v, "session"), v["lines"]),
        Some(b) => format!(
            "session {}: chain BROKEN at line {} of {} ({})\n",
            str_of(v, "session"),
            b["line"],
            b["file"].as_str().unwrap_or(""),
            b["why"].as_str().unwrap_or("")
        ),
    }
}

/// Eight levels for the context sparkline.
const SPARKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A ratio in [0, 1] as one sparkline character.
pub fn spark(r: f64) -> char {
    SPARKS[((r.clamp(0.0, 1.0) * 7.0).round() as usize).min(7)]
}

/// The summary of a session (`kijito-report/1`): only events at or after
/// `cutoff_ms` count, when given; the chain state is always the whole file's.
pub fn summary(session: &SessionId, j: &Journal, cutoff_ms: Option<i64>) -> Value {
    let events: Vec<&Value> = j.events.iter().filter(|e| cutoff_ms.is_none_or(|c| e["ts_ms"].as_i64().unwrap_or(0) >= c)).collect();
    let ts = |e: &&Value| e["ts_ms"].as_i64().unwrap_or(0);
    let start = j.events.iter().find(|e| str_of(e, "kind") == "session_start");
    let first = events.first().map(ts);
    let last = events.last().map(ts);
    let host = start.map(|e| str_of(e, "host")).filter(|h| !h.is_empty()).unwrap_or("unknown");
    let of = |k: &'static str| events.iter().filter(move |e| str_of(e, "kind") == k);

    // Compactions: the claim says ATTESTED or not; a PreCompact never
    // claimed still counts (UNATTESTED, its own reason).
    let claims: Vec<&&Value> = of("claim").collect();
    let compactions: Vec<Value> = if claims.is_empty() {
        of("precompact")
            .map(|e| json!({"ts_ms": e["ts_ms"], "attested": e["attested"].as_bool().unwrap_or(false), "reason": str_of(e, "reason")}))
            .collect()
    } else {
        claims
            .iter()
            .map(|e| json!({"ts_ms": e["ts_ms"], "attested": e["attested"].as_bool().unwrap_or(false), "reason": str_of(e, "reason")}))
            .collect()
    };
    let attested = compactions.iter().filter(|c| c["attested"] == true).count();
    let mut reasons: BTreeMap<String, u64> = BTreeMap::new();
    for c in compactions.iter().filter(|c| c["attested"] != true) {
        *reasons.entry(str_of(c, "reason").to_owned()).or_default() += 1;
    }

    // Denials by rule: the policy's denials, each consent asked for
    // (`policy_consent_required`) and each consent check refused (its code).
    let mut denials: BTreeMap<String, u64> = BTreeMap::new();
    for e in events.iter() {
        let rule = match (str_of(e, "kind"), str_of(e, "decision")) {
            ("tool_decision", "deny") => e["code"].as_str().or_else(|| e["rules"][0].as_str()).unwrap_or("unknown"),
            ("consent_requested", _) => "policy_consent_required",
            ("consent_refused", _) => e["code"].as_str().unwrap_or("unknown"),
            _ => continue,
        };
        *denials.entry(rule.to_owned()).or_default() += 1;
    }

    // What waits for the user: the last consent request not followed by a
    // spent or confirmed consent; a wake hold not lifted since.
    let mut waiting = Vec::new();
    // A challenge `consent request` issued after the request says how the
    // user answers it (`via` token, wallet or key) and its record.
    let consent_kinds = ["consent_requested", "consent_issued", "consent_confirmed", "consent_spent", "consent_refused"];
    let newest = j.events.iter().rposition(|e| consent_kinds.contains(&str_of(e, "kind")));
    if let Some(i) = newest.filter(|i| matches!(str_of(&j.events[*i], "kind"), "consent_requested" | "consent_issued")) {
        let issued = Some(&j.events[i]).filter(|e| str_of(e, "kind") == "consent_issued");
        let asked = j.events[..=i].iter().rev().find(|e| str_of(e, "kind") == "consent_requested");
        let e = asked.unwrap_or(&j.events[i]);
        let mut w = json!({"what": "consent", "since_ms": e["ts_ms"], "tool": str_of(e, "tool"), "summary": str_of(e, "summary"), "via": str_of(e, "via")});
        if let Some(x) = issued {
            w["via"] = json!(str_of(x, "via"));
            w["record"] = json!(str_of(x, "record"));
            if asked.is_none() {
                w["summary"] = json!(str_of(x, "summary"));
            }
        }
        waiting.push(w);
    }
    // A held session lets no mutating call through until `wake-check --live`
    // answered: an allowed mutating call after the hold says it was lifted.
    if let Some(i) = j.events.iter().rposition(|e| str_of(e, "kind") == "wake_check") {
        let e = &j.events[i];
        // `wake-check --live` records its answer: once it answered, nothing
        // waits for it (a cautious answer keeps irreversible calls at high risk).
        let lifted = j.events[i..]
            .iter()
            .any(|l| (str_of(l, "kind") == "tool_decision" && str_of(l, "decision") == "allow") || str_of(l, "kind") == "wake_check_live");
        if e["hold"] == true && !lifted {
            waiting.push(json!({"what": "wake_check_live", "since_ms": e["ts_ms"], "findings": e["findings"]}));
        }
    }

    // Latch mode: as the policy last read it; each change on the way.
    let mut mode_changes = Vec::new();
    let mut mode: Option<String> = None;
    for e in j.events.iter() {
        let m = match str_of(e, "kind") {
            "tool_decision" => e["latch_mode"].as_str(),
            "latch_mode" => e["mode"].as_str(),
            "recovery" if str_of(e, "outcome") == "silent_witness" => Some("silent_witness"),
            _ => None,
        };
        if let Some(m) = m {
            if mode.as_deref() != Some(m) {
                if mode.is_some() || m != "absent" {
                    mode_changes.push(json!({"ts_ms": e["ts_ms"], "from": mode, "to": m}));
                }
                mode = Some(m.to_owned());
            }
        }
    }

    let context: Vec<f64> = of("context_sample").filter_map(|e| e["ratio"].as_f64()).collect();
    let sparkline: String = context.iter().map(|r| spark(*r)).collect();
    let count = |k: &'static str| of(k).count();
    json!({
        "schema": SCHEMA,
        "session": session.as_str(),
        "host": host,
        "source": start.map(|e| str_of(e, "source")),
        "version": start.map(|e| str_of(e, "version")),
        "first_ms": first,
        "last_ms": last,
        "duration_ms": first.zip(last).map(|(a, b)| b - a).unwrap_or(0),
        "events_total": events.len(),
        "compactions": {
            "total": compactions.len(),
            "attested": attested,
            "unattested": compactions.len() - attested,
            "unattested_reasons": reasons,
        },
        "consents": {
            "requested": count("consent_requested"),
            "issued": count("consent_issued"),
            "confirmed": count("consent_confirmed"),
            "spent": count("consent_spent"),
            "refused": count("consent_refused"),
        },
        "denials": denials,
        "waiting": waiting,
        "latch_mode": mode,
        "mode_changes": mode_changes,
        "context": context,
        "sparkline": sparkline,
        "chain": verify_value(session, j),
        "failures": j.failures,
        "events": events,
    })
}

/// `HH:MM:SS` (UTC) of a millisecond timestamp.
pub fn clock(ms: i64) -> String {
    let s = ms.div_euclid(1000).rem_euclid(86_400);
    format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60)
}

fn duration(ms: i64) -> String {
    let m = ms / 60_000;
    if m >= 60 {
        format!("{}h{:02}m", m / 60, m % 60)
    } else {
        format!("{}m{:02}s", m, ms / 1000 % 60)
    }
}

/// One timeline line's text after the time and kind: the event's own fields.
pub fn event_detail(e: &Value) -> String {
    let s = |k: &str| str_of(e, k);
    let att = |e: &Value| if e["attested"] == true { "ATTESTED" } else { "UNATTESTED" };
    match s("kind") {
        "session_start" => format!("host {} source {} version {}", s("host"), s("source"), s("version")),
        "prompt" => format!("{} chars sha256 {}", e["length"], s("sha256").get(..12).unwrap_or("")),
        "tool_decision" => {
            let code = e["code"].as_str().map(|c| format!(" ({c})")).unwrap_or_default();
            format!("{} {}{code} [{}] {}", s("decision"), s("tool"), s("latch_mode"), s("summary"))
        }
        "consent_confirmed" if e["risk"].is_string() => {
            format!("via {} risk {}{}", s("via"), s("risk"), if e["reconfirm_needed"] == true { " (a second message needed)" } else { "" })
        }
        "consent_requested" | "consent_confirmed" | "consent_spent" => format!("via {} {} {}", s("via"), s("tool"), s("summary")),
        "consent_refused" => format!("via {} ({}) {}", s("via"), s("code"), s("summary")),
        "consent_issued" => format!("via {} risk {} record {} {}", s("via"), s("risk"), s("record"), s("summary")),
        "recovery" if s("outcome") == "silent_witness" => {
            format!("SILENT WITNESS ({}){}", s("reason"), if e["entered_now"] == true { ", entered now" } else { "" })
        }
        "recovery" => format!("recovery protocol, attempt {} of {}", e["attempt"], e["max_attempts"]),
        "boot" => format!("pointer-snapshot of pointer {} by {}", e["pointer_id"], e["agent"].as_str().unwrap_or("main agent")),
        "pass_recorded" => {
            format!("pointer {} snapshot {} boots witnessed {}", e["pointer_id"], s("snapshot_digest"), e["boots_witnessed"])
        }
        "pass_withdrawn" => format!("reason {}", s("reason")),
        "compaction_requested" | "compaction_triggered" => {
            format!("via {} state {}{}", s("via"), s("state"), e["code"].as_str().map(|c| format!(" ({c})")).unwrap_or_default())
        }
        "precompact" => format!("{} reason {} trigger {}", att(e), s("reason"), s("trigger")),
        "claim" => format!("{} at {} reason {}", att(e), s("hook"), s("reason")),
        "delivery" => {
            let digests = match (e["pointer_digest"].as_str(), e["snapshot_digest"].as_str()) {
                (Some(p), Some(n)) => {
                    format!(" pointer {} digest {} snapshot {}", e["pointer_id"], p.get(..12).unwrap_or(p), n.get(..12).unwrap_or(n))
                }
                _ => String::new(),
            };
            format!("{} at {} reason {}{digests}", att(e), s("hook"), s("reason"))
        }
        "latch_mode" => match (e["via"].as_str(), e["from"].as_str()) {
            (Some(via), Some(from)) => format!("{from} -> {} by the user's {via} token", s("mode")),
            (Some(via), None) => format!("{} by the user's {via} token", s("mode")),
            _ => format!("{} {}", s("mode"), s("note")),
        },
        "wake_check" => format!("hold {} findings {}", e["hold"], e["findings"]),
        "wake_check_live" => format!("{} hold {} findings {}", s("mode"), e["hold"], e["findings"]),
        "context_sample" => format!("context {:.0}%", e["ratio"].as_f64().unwrap_or(0.0) * 100.0),
        _ => String::new(),
    }
}

/// The text report: header, then the timeline.
pub fn to_text(s: &Value) -> String {
    let mut out = String::new();
    let c = &s["compactions"];
    out.push_str(&format!(
        "session {}  host {}  duration {}  ({} events)\n",
        str_of(s, "session"),
        str_of(s, "host"),
        duration(s["duration_ms"].as_i64().unwrap_or(0)),
        s["events_total"]
    ));
    let reasons = c["unattested_reasons"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| format!("{k} x{v}")).collect::<Vec<_>>().join(", "))
        .unwrap_or_default();
    out.push_str(&format!(
        "compactions {}: ATTESTED {} / UNATTESTED {}{}\n",
        c["total"],
        c["attested"],
        c["unattested"],
        if reasons.is_empty() { String::new() } else { format!(" ({reasons})") }
    ));
    let k = &s["consents"];
    out.push_str(&format!(
        "consents: requested {} confirmed {} spent {} refused {}\n",
        k["requested"], k["confirmed"], k["spent"], k["refused"]
    ));
    let denials =
        s["denials"].as_object().map(|m| m.iter().map(|(k, v)| format!("{k} x{v}")).collect::<Vec<_>>().join(", ")).unwrap_or_default();
    out.push_str(&format!("denials: {}\n", if denials.is_empty() { "none".into() } else { denials }));
    let waiting: Vec<String> = s["waiting"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|w| match str_of(w, "what") {
                    "consent" => format!(
                        "your consent for {} `{}` (asked {}{})",
                        str_of(w, "tool"),
                        str_of(w, "summary"),
                        clock(w["since_ms"].as_i64().unwrap_or(0)),
                        match (str_of(w, "via"), str_of(w, "record")) {
                            ("key", r) if !r.is_empty() => format!("; memory-latch approve --token-id {r} in your terminal"),
                            ("wallet", r) if !r.is_empty() => format!("; your wallet's signature of record {r}, sent as your message"),
                            _ => String::new(),
                        }
                    ),
                    _ => format!("wake-check --live (writes held since {})", clock(w["since_ms"].as_i64().unwrap_or(0))),
                })
                .collect()
        })
        .unwrap_or_default();
    out.push_str(&format!("waiting for you: {}\n", if waiting.is_empty() { "nothing".into() } else { waiting.join("; ") }));
    out.push_str(&format!("latch mode: {}\n", s["latch_mode"].as_str().unwrap_or("unknown")));
    if !str_of(s, "sparkline").is_empty() {
        out.push_str(&format!("context: {}\n", str_of(s, "sparkline")));
    }
    let chain = &s["chain"];
    match chain["break"].as_object() {
        None => out.push_str(&format!("journal: chain intact ({} lines)\n", chain["lines"])),
        Some(b) => out.push_str(&format!("journal: chain BROKEN at line {} of {}\n", b["line"], b["file"].as_str().unwrap_or(""))),
    }
    if let Some(o) = s["outside_sessions"].as_object() {
        out.push_str(&format!(
            "outside any session: {} event(s) run by hand since this session started, the newest at {} (kijito-report --session {})\n",
            o["events"],
            clock(o["last_ms"].as_i64().unwrap_or(0)),
            o["session"].as_str().unwrap_or(journal::USER_SESSION)
        ));
    }
    if let Some(f) = s["failures"].as_array().filter(|f| !f.is_empty()) {
        let codes: Vec<String> = f.iter().map(|x| format!("{} ({})", str_of(x, "code"), str_of(x, "kind"))).collect();
        out.push_str(&format!("journal: {} event(s) could not be written: {}\n", f.len(), codes.join(", ")));
    }
    out.push('\n');
    for e in s["events"].as_array().into_iter().flatten() {
        out.push_str(&format!("{}  {:<20} {}\n", clock(e["ts_ms"].as_i64().unwrap_or(0)), str_of(e, "kind"), event_detail(e)));
    }
    out
}

/// Sessions of a data dir for the viewer's index: each one's summary
/// without its events (newest first, at most `max`).
pub fn sessions_overview(data: &Path, max: usize) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for (s, _) in journal::sessions(data)?.into_iter().take(max) {
        let Ok(j) = journal::read(data, &s) else { continue };
        let mut v = summary(&s, &j, None);
        if let Some(o) = v.as_object_mut() {
            o.remove("events");
        }
        out.push(v);
    }
    Ok(out)
}
