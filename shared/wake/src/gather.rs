//! Reading the facts: the latch (fast verification, lock, tokens, Silent
//! Witness), the QA private state (without creating anything), the recorded
//! pointer, and with `--live` the snapshot verification against the server.
//! Read-only: nothing here writes.

use crate::{Facts, LatchFacts, LatchState, LiveFacts, PointerRecord, QaFacts, QaState, Recorded, Stamp, StepNames};
use kijito_files::private;
use kijito_gate::state::{self as qa_state, read_state, StateFile};
use kijito_gate::{Attempt, Pass, Reentry};
use kijito_latch::{self as latch, chain, layout, EntrySummary};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, SessionId};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// Most directory entries of `qa/` looked at.
const MAX_QA_ENTRIES: usize = 10_000;

/// What to check.
#[derive(Debug, Clone)]
pub struct Options {
    /// The workspace (its `.memory-latch` is checked when it exists);
    /// `None` skips the latch checks.
    pub workspace: Option<PathBuf>,
    /// The data dir (its `qa/` is checked when it exists).
    pub data_dir: Option<AbsPath>,
    /// Only this session's QA files (all sessions when `None`).
    pub session: Option<SessionId>,
    pub long_sleep_after_s: u64,
    /// The hmac key file of the latch, if any.
    pub hmac_key_file: Option<PathBuf>,
    /// The user's public key (minisign) and the check that uses it: the
    /// checkpoint check then starts from the latest checkpoint signed by
    /// it, signature checked. Given by the caller (`wake-check` sets
    /// [`SignedCheckpoint::from_key_file`]), so that a caller that never
    /// sets it (the SessionStart hook) links no Ed25519 code.
    pub signed_checkpoint: Option<SignedCheckpoint>,
    /// Where the boot id is read.
    pub boot_id_file: PathBuf,
    /// The live snapshot verification (network), given by the caller: this
    /// crate links no HTTP code (docs/architecture.md).
    pub live: Option<LiveProbe>,
    /// Directory of the installed helpers, for the recommended steps.
    pub helpers: Option<PathBuf>,
    pub now_ms: u64,
}

impl Options {
    pub fn new(workspace: Option<PathBuf>, now_ms: u64) -> Options {
        Options {
            workspace,
            data_dir: None,
            session: None,
            long_sleep_after_s: crate::DEFAULT_LONG_SLEEP_S,
            hmac_key_file: None,
            signed_checkpoint: None,
            boot_id_file: PathBuf::from(latch::BOOT_ID_FILE),
            live: None,
            helpers: None,
            now_ms,
        }
    }
}

/// The current boot id (as memory-latch records it), `None` when unknown.
pub fn read_boot_id(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(128)]).trim().to_ascii_lowercase();
    (!text.is_empty() && text.len() <= 64 && text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')).then_some(text)
}

/// Open the latch when the workspace has a `.memory-latch` (even a broken
/// one: a symlinked or insecure directory is reported by verification).
pub fn open_latch(opts: &Options) -> Result<Option<latch::Latch>> {
    let Some(workspace) = &opts.workspace else { return Ok(None) };
    if std::fs::symlink_metadata(workspace.join(layout::DIR_NAME)).is_err() {
        return Ok(None);
    }
    let mut config = latch::Config::new(workspace);
    config.hmac_key_file = opts.hmac_key_file.clone();
    config.boot_id_file = opts.boot_id_file.clone();
    latch::Latch::open(&config).map(Some)
}

/// Everything [`crate::assess`] needs, plus the opened latch (for the
/// degraded-mode entry).
pub fn gather(opts: &Options) -> Result<(Facts, Option<latch::Latch>)> {
    let handle = open_latch(opts)?;
    let latch = match (&handle, &opts.workspace) {
        (Some(l), _) => LatchFacts::Present(Box::new(latch_state(l, opts))),
        (None, None) => LatchFacts::Absent,
        (None, Some(w)) => absent_latch(w),
    };
    let qa = match &opts.data_dir {
        None => QaFacts::Absent("no data dir".into()),
        Some(d) => qa_facts(d, opts.session.as_ref()),
    };
    let live = match opts.live {
        Some(probe) => live_facts(&qa, probe),
        None => LiveFacts::NotAsked,
    };
    let facts = Facts {
        now_ms: opts.now_ms,
        long_sleep_after_ms: opts.long_sleep_after_s.saturating_mul(1000),
        boot_id: read_boot_id(&opts.boot_id_file),
        latch,
        qa,
        live,
        names: StepNames { data_dir: opts.data_dir.as_ref().map(|d| d.as_str().to_owned()), helpers: opts.helpers.clone() },
    };
    Ok((facts, handle))
}

/// A workspace without `.memory-latch`: missing, deleted since its head
/// record, or simply never initialised.
fn absent_latch(workspace: &Path) -> LatchFacts {
    match std::fs::metadata(workspace) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => return LatchFacts::WorkspaceMissing(format!("{} is not a directory", workspace.display())),
        Err(e) => return LatchFacts::WorkspaceMissing(format!("{}: {e}", workspace.display())),
    }
    let Ok(l) = latch::Latch::open(&latch::Config::new(workspace)) else { return LatchFacts::Absent };
    match l.head_record() {
        Ok(Some(rec)) => LatchFacts::Deleted { entry_seq: Some(rec.entry_seq) },
        // No head record: the index beside the head records still knows a
        // workspace that had a latch (deleting both is no way to
        // full trust); an index that cannot be read fails closed.
        _ => match l.had_latch() {
            Ok(true) => LatchFacts::Deleted { entry_seq: None },
            Err(e) if e.code_as() == Some(latch::index::codes::INDEX_INVALID) => LatchFacts::Deleted { entry_seq: None },
            // No index, or no state directory at all: nothing says a latch was here.
            _ => LatchFacts::Absent,
        },
    }
}

fn err_line(e: &Error) -> String {
    format!("{}: {}", e.code(), e.message())
}

fn latch_state(l: &latch::Latch, opts: &Options) -> LatchState {
    let now_ms = opts.now_ms;
    let verify = l.verify_fast();
    let initialised = verify.initialised;
    LatchState {
        lock: if initialised {
            l.lock_probe(now_ms).map_err(|e| err_line(&e))
        } else {
            Ok(latch::LockProbe { exists: false, held: false, age_ms: 0, interrupted_writes: 0 })
        },
        tokens: if initialised { l.tokens(now_ms).map_err(|e| err_line(&e)) } else { Ok(Vec::new()) },
        witness_error: l.witness_marker().err().map(|e| err_line(&e)),
        checkpoint: if verify.trusted { checkpoint(l, opts).map_err(|e| err_line(&e)) } else { Ok(None) },
        before_wake: if verify.trusted { verify.head.as_ref().and_then(|h| before_wake(l, h)) } else { None },
        verify,
    }
}

/// The chain against the last saved checkpoint: the latest one, or with a
/// public key the latest one signed by it.
fn checkpoint(l: &latch::Latch, opts: &Options) -> Result<Option<latch::checkpoint::Consistency>> {
    match &opts.signed_checkpoint {
        None => l.consistency_since_saved(),
        Some(s) => (s.check)(l, &s.public_key_file),
    }
}

/// The chain against the latest checkpoint signed by the key in a file.
pub type SignedCheck = fn(&latch::Latch, &Path) -> Result<Option<latch::checkpoint::Consistency>>;

/// [`Options::signed_checkpoint`]: the public key file and the check.
#[derive(Debug, Clone)]
pub struct SignedCheckpoint {
    pub public_key_file: PathBuf,
    pub check: SignedCheck,
}

impl SignedCheckpoint {
    /// The minisign public key in `path`, checked with
    /// [`latch::Latch::consistency_since_signed`] (Ed25519).
    pub fn from_key_file(path: PathBuf) -> SignedCheckpoint {
        SignedCheckpoint { public_key_file: path, check: |l, p| l.consistency_since_signed(&latch::sign::load_public_key(p)?) }
    }
}

/// The `details` of the verified head entry (re-read from the live manifest
/// and matched to the verified head's payload hash).
pub fn head_details(l: &latch::Latch, head: &EntrySummary) -> Result<Vec<String>> {
    let bytes = layout::read_file(&l.paths().manifest, latch::codes::MANIFEST_SYMLINK)?;
    let parsed = chain::parse_file(&bytes, chain::LIVE_HEADER, "_manifest.md");
    match parsed.entries.last() {
        Some(e) if e.integrity.payload_hash == head.payload_hash => Ok(e.details.clone()),
        _ => Err(Error::new(kijito_protocol::codes::latch::FILE_CHANGED, "the manifest changed while wake-check read it")),
    }
}

/// When `head` is a `wake_findings` entry: the newest live entry before it
/// that is not one (re-read from the live manifest, matched to the verified
/// head's payload hash; anything else: `None`, and the head is used).
fn before_wake(l: &latch::Latch, head: &EntrySummary) -> Option<EntrySummary> {
    if head.event != latch::Event::WakeFindings {
        return None;
    }
    let bytes = layout::read_file(&l.paths().manifest, latch::codes::MANIFEST_SYMLINK).ok()?;
    let parsed = chain::parse_file(&bytes, chain::LIVE_HEADER, "_manifest.md");
    if parsed.entries.last().map(|e| e.integrity.payload_hash.as_str()) != Some(head.payload_hash.as_str()) {
        return None;
    }
    parsed.entries.iter().rev().find(|e| e.event != latch::Event::WakeFindings).map(EntrySummary::of)
}

// ----- QA ------------------------------------------------------------------------

/// Read `<data>/qa/` without creating it.
pub fn qa_facts(data: &AbsPath, only: Option<&SessionId>) -> QaFacts {
    let mut insecure = Vec::new();
    match std::fs::symlink_metadata(data.as_path()) {
        Err(_) => return QaFacts::Absent(format!("data dir {data} does not exist")),
        Ok(_) => {
            if let Err(e) = private::check_dir(data.as_path(), false) {
                insecure.push(format!("data dir: {}", err_line(&e)));
            }
        }
    }
    let qa = match kijito_gate::QaDir::read_only(data) {
        Ok(q) => q.path().as_path().to_path_buf(),
        Err(e) => return QaFacts::Absent(format!("no QA dir in {data}: {}", e.code())),
    };
    if std::fs::symlink_metadata(&qa).is_err() {
        return QaFacts::Absent(format!("{} does not exist", qa.display()));
    }
    let mut state = QaState {
        insecure,
        unreadable: Vec::new(),
        passes: Vec::new(),
        tickets: Vec::new(),
        attempts: Vec::new(),
        reentries: Vec::new(),
        newest_mtime_ms: None,
        pointer_record: PointerRecord::Missing,
    };
    if let Err(e) = private::check_dir(&qa, true) {
        state.insecure.push(format!("qa dir: {}", err_line(&e)));
        if matches!(e.code_as(), Some(private::codes::DIR_SYMLINK | private::codes::DIR_NOT_DIR)) {
            return QaFacts::Present(state);
        }
    }
    let entries = match std::fs::read_dir(&qa) {
        Ok(rd) => rd,
        Err(e) => {
            state.insecure.push(format!("qa dir: cannot list: {e}"));
            return QaFacts::Present(state);
        }
    };
    for ent in entries.take(MAX_QA_ENTRIES).flatten() {
        let name = ent.file_name();
        let Some(name) = name.to_str() else { continue };
        // The wake hold is the wake check's own output, not activity: it
        // must not end the long sleep it reports; nor the temp file of a
        // hold write killed before its rename, else the next start would
        // lose the answer the killed one never gave.
        if name.starts_with(crate::hold::PREFIX) || name.strip_prefix('.').is_some_and(|n| n.starts_with(crate::hold::PREFIX)) {
            continue;
        }
        let path = ent.path();
        let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
        if meta.is_file() && !meta.file_type().is_symlink() {
            let mtime = (meta.mtime().max(0) as u64).saturating_mul(1000) + (meta.mtime_nsec().max(0) as u64) / 1_000_000;
            state.newest_mtime_ms = state.newest_mtime_ms.max(Some(mtime));
        }
        if name == qa_state::CURRENT_POINTER {
            state.pointer_record = pointer_record(&path, &mut state.insecure);
            continue;
        }
        let Some((kind, session)) = StateFile::classify(name) else { continue };
        if !matches!(kind, StateFile::Pass | StateFile::Ticket | StateFile::Attempt | StateFile::Reentry) {
            continue;
        }
        if only.is_some_and(|s| *s != session) {
            continue;
        }
        let bytes = match read_state(&path) {
            Ok(b) => b,
            Err(e) if qa_state::is_insecure(e.code()) => {
                state.insecure.push(format!("{name}: {}", err_line(&e)));
                continue;
            }
            Err(e) => {
                state.unreadable.push((session.clone(), format!("{name}: {}", e.code())));
                continue;
            }
        };
        let stamp = |at_ms: i64| Stamp { session: session.clone(), at_ms };
        let parsed: Result<Option<Stamp>> = match kind {
            StateFile::Pass => Pass::parse(&bytes).map(|p| Some(stamp(p.recorded_at_ms))),
            StateFile::Ticket => Pass::parse(&bytes).map(|_| None),
            StateFile::Attempt => Attempt::parse(&bytes).map(|a| Some(stamp(a.recorded_at_ms))),
            StateFile::Reentry => Reentry::parse(&bytes).map(|r| Some(stamp(r.claimed_at_ms))),
            _ => Ok(None),
        };
        match (kind, parsed) {
            (_, Err(e)) => state.unreadable.push((session.clone(), format!("{name}: {}", e.code()))),
            (StateFile::Ticket, Ok(_)) => state.tickets.push(session.clone()),
            (StateFile::Pass, Ok(Some(s))) => state.passes.push(s),
            (StateFile::Attempt, Ok(Some(s))) => state.attempts.push(s),
            (StateFile::Reentry, Ok(Some(s))) => state.reentries.push(s),
            (_, Ok(_)) => {}
        }
    }
    QaFacts::Present(state)
}

/// Parse `current-pointer.json` strictly (schemaVersion 2, exact keys).
pub fn parse_pointer_record(bytes: &[u8]) -> std::result::Result<Recorded, String> {
    Recorded::parse(bytes)
}

fn pointer_record(path: &Path, insecure: &mut Vec<String>) -> PointerRecord {
    match read_state(path) {
        Ok(b) => match parse_pointer_record(&b) {
            Ok(r) => PointerRecord::Valid(r),
            Err(why) => PointerRecord::Invalid(why),
        },
        Err(e) if qa_state::is_insecure(e.code()) => {
            insecure.push(format!("current-pointer.json: {}", err_line(&e)));
            PointerRecord::Invalid(e.code().to_owned())
        }
        Err(e) => PointerRecord::Invalid(e.code().to_owned()),
    }
}

// ----- live ------------------------------------------------------------------------

/// Verifies the recorded pointer expectation against the live server
/// (`kijito_client::snapshot::verify_recorded`); `Err` carries the verifier's code.
pub type LiveProbe = fn(&Recorded) -> Result<()>;

fn live_facts(qa: &QaFacts, probe: LiveProbe) -> LiveFacts {
    let QaFacts::Present(QaState { pointer_record: PointerRecord::Valid(r), .. }) = qa else {
        return LiveFacts::NoRecord;
    };
    // The control runs first, before any network call.
    if let Err(e) = kijito_protocol::render::run_known_bad_control() {
        return LiveFacts::Failed { code: e.code().to_owned(), message: e.message().to_owned(), kind: e.kind() };
    }
    match probe(r) {
        Ok(()) => LiveFacts::Unchanged,
        Err(e) => LiveFacts::Failed { code: e.code().to_owned(), message: e.message().to_owned(), kind: e.kind() },
    }
}
