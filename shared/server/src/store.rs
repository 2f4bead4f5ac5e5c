//! The SQLite store of kijito-local: memories, relations (edges), messages
//! and leases. One connection behind a mutex (SQLite serialises writers
//! anyway, and a single prepared-statement cache is fastest for the small
//! reads the API does); WAL journal, `synchronous=FULL`, schema versioned by
//! `PRAGMA user_version` with forward-only migrations. Ids come from
//! `AUTOINCREMENT`, so they are positive and never reused.

use crate::lease::{self, ClaimDecision, Lease, Reason};
use crate::render::{Edge, Marker, Memory, EDGE_PREVIEWS};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::TaggedDigest;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension};
use std::fs::OpenOptions;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// Stable codes of this module (registered in the workspace by `tests/it/architecture.rs`).
pub mod codes {
    kijito_protocol::codes! {
        OPEN Open = "store_open_failed",
        SCHEMA_TOO_NEW SchemaTooNew = "store_schema_too_new",
        FAILED Failed = "store_failed",
    }
}

/// Migrations, index = version - 1. Append only; never edit a shipped one.
const MIGRATIONS: &[&str] = &[
    // v1
    "CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        type TEXT NOT NULL,
        scope TEXT NOT NULL,
        project TEXT NOT NULL,
        persona TEXT NOT NULL,
        status TEXT NOT NULL,
        source TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        importance REAL NOT NULL,
        confidence REAL NOT NULL,
        evidence INTEGER NOT NULL,
        basis TEXT NOT NULL,
        marker TEXT NOT NULL CHECK (marker IN ('none', 'eroded', 'faded')),
        content TEXT NOT NULL
    );
    CREATE TABLE relations (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        from_id INTEGER NOT NULL REFERENCES memories(id),
        to_id INTEGER NOT NULL REFERENCES memories(id),
        kind TEXT NOT NULL
    );
    CREATE INDEX relations_from ON relations (from_id, id);
    CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        recipient TEXT NOT NULL,
        sender TEXT NOT NULL,
        content TEXT NOT NULL,
        created_ms INTEGER NOT NULL
    );
    CREATE TABLE leases (
        message_id INTEGER PRIMARY KEY REFERENCES messages(id),
        persona TEXT NOT NULL,
        expires_at_ms INTEGER NOT NULL
    );",
    // v2: full-text search for `kijito_recall` (an external-content FTS5
    // index kept in step by triggers) and the scope/project/time index of
    // `kijito_recent`.
    "CREATE VIRTUAL TABLE memories_fts USING fts5(content, content='memories', content_rowid='id');
    INSERT INTO memories_fts (memories_fts) VALUES ('rebuild');
    CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
    END;
    CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
    END;
    CREATE TRIGGER memories_fts_update AFTER UPDATE OF content ON memories BEGIN
        INSERT INTO memories_fts (memories_fts, rowid, content) VALUES ('delete', old.id, old.content);
        INSERT INTO memories_fts (rowid, content) VALUES (new.id, new.content);
    END;
    CREATE INDEX memories_scope_project_created ON memories (scope, project, created_ms, id);",
];

/// The schema version this build writes.
pub const SCHEMA_VERSION: i64 = MIGRATIONS.len() as i64;

/// A memory to create (validated by the caller).
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    pub kind: String,
    pub scope: String,
    pub project: String,
    pub persona: String,
    pub status: String,
    pub source: String,
    pub created_ms: i64,
    pub importance: f64,
    pub confidence: f64,
    pub evidence: u64,
    pub basis: String,
    pub content: String,
}

/// Result of a PATCH.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOutcome {
    Updated,
    /// Missing, or of another scope/project (the service does not say which).
    NotFoundOrForbidden,
    /// `If-Match` did not equal the current ETag; nothing written.
    PreconditionFailed,
}

/// Result of a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    Claimed,
    Refused { reason: Reason, claimed_by: String, lease_expired: bool },
    UnknownMessage,
}

/// The ETag of a content: `"sha256:<digest>"`.
pub fn etag_of(content: &str) -> String {
    format!("\"{}\"", TaggedDigest::of(content.as_bytes()))
}

fn db_err(e: rusqlite::Error) -> Error {
    Error::new(codes::FAILED, format!("database error: {e}"))
}

pub struct Store {
    conn: Mutex<Connection>,
    /// Document frequencies of recall phrases, valid while the index is unchanged.
    df: Mutex<DfCache>,
}

impl Store {
    /// Open (creating owner-only if missing) the database at `path` and
    /// migrate it to `SCHEMA_VERSION`. Refuses a symlink and a database
    /// written by a newer build.
    pub fn open(path: &Path) -> Result<Store> {
        let shown = path.display();
        // Create the file ourselves so it is 0600 from the first byte.
        match OpenOptions::new().write(true).create_new(true).mode(0o600).custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC).open(path) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                kijito_files::private::stat_checked(
                    path,
                    kijito_files::private::FileRules { owner_only: true, min_bytes: 0, max_bytes: u64::MAX },
                )?;
            }
            Err(e) => return Err(Error::new(codes::OPEN, format!("cannot create {shown}: {e}"))),
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NOFOLLOW | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(|e| Error::new(codes::OPEN, format!("cannot open {shown}: {e}")))?;
        let setup = |conn: &Connection| -> rusqlite::Result<()> {
            conn.busy_timeout(std::time::Duration::from_secs(5))?;
            let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
            if !mode.eq_ignore_ascii_case("wal") {
                return Err(rusqlite::Error::InvalidQuery);
            }
            // 16 MiB of page cache per connection (SQLite's default is 2 MiB):
            // recall reads the FTS5 doclists of the words asked for.
            conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384;")?;
            conn.set_prepared_statement_cache_capacity(32);
            Ok(())
        };
        setup(&conn).map_err(|e| Error::new(codes::OPEN, format!("cannot set up {shown}: {e}")))?;
        let store = Store { conn: Mutex::new(conn), df: Mutex::new(DfCache::default()) };
        store.migrate()?;
        // Document frequencies for recall (a per-connection virtual table over
        // the index; nothing stored).
        store
            .lock()
            .execute_batch("CREATE VIRTUAL TABLE IF NOT EXISTS temp.memories_vocab USING fts5vocab(main, memories_fts, row);")
            .map_err(|e| Error::new(codes::OPEN, format!("cannot set up {shown}: {e}")))?;
        Ok(store)
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        // A panic while holding the lock cannot leave SQLite inconsistent
        // (transactions roll back on drop), so a poisoned lock is usable.
        self.conn.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn migrate(&self) -> Result<()> {
        let mut conn = self.lock();
        let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(db_err)?;
        if version > SCHEMA_VERSION {
            return Err(Error::new(
                codes::SCHEMA_TOO_NEW,
                format!("database schema version {version} is newer than this build's {SCHEMA_VERSION}"),
            ));
        }
        for (i, sql) in MIGRATIONS.iter().enumerate().skip(version.max(0) as usize) {
            // IMMEDIATE, and the version read again inside: another process
            // (`serve` and `mcp` on one database) may have migrated meanwhile.
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
            let now: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(db_err)?;
            if now > i as i64 {
                continue;
            }
            tx.execute_batch(sql).map_err(db_err)?;
            tx.pragma_update(None, "user_version", (i + 1) as i64).map_err(db_err)?;
            tx.commit().map_err(db_err)?;
        }
        Ok(())
    }

    /// The schema version stored in the database.
    pub fn schema_version(&self) -> Result<i64> {
        self.lock().query_row("PRAGMA user_version", [], |r| r.get(0)).map_err(db_err)
    }

    pub fn create_memory(&self, m: &NewMemory) -> Result<u64> {
        let conn = self.lock();
        insert_memory(&conn, m)
    }

    /// Create many memories in one transaction (seeding, benchmarks);
    /// returns the first and last id.
    pub fn create_memories(&self, memories: &[NewMemory]) -> Result<Option<(u64, u64)>> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
        let mut range = None;
        for m in memories {
            let id = insert_memory(&tx, m)?;
            range = Some((range.map_or(id, |(first, _)| first), id));
        }
        tx.commit().map_err(db_err)?;
        Ok(range)
    }

    /// A memory by id, or None.
    pub fn memory(&self, id: u64) -> Result<Option<Memory>> {
        let conn = self.lock();
        load_memory(&conn, id)
    }

    /// A memory with its first `EDGE_PREVIEWS` outgoing edges and whether
    /// there are more.
    pub fn memory_with_edges(&self, id: u64) -> Result<Option<(Memory, Vec<Edge>, bool)>> {
        let conn = self.lock();
        let Some(memory) = load_memory(&conn, id)? else { return Ok(None) };
        let mut stmt = conn
            .prepare_cached(
                "SELECT r.kind, r.to_id, m.content FROM relations r JOIN memories m ON m.id = r.to_id
                 WHERE r.from_id = ?1 ORDER BY r.id LIMIT ?2",
            )
            .map_err(db_err)?;
        let mut edges = stmt
            .query_map(params![id as i64, (EDGE_PREVIEWS + 1) as i64], |r| {
                let content: String = r.get(2)?;
                Ok(Edge { kind: r.get(0)?, to: r.get::<_, i64>(1)? as u64, preview: crate::render::preview(&content) })
            })
            .map_err(db_err)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(db_err)?;
        let has_more = edges.len() > EDGE_PREVIEWS;
        edges.truncate(EDGE_PREVIEWS);
        Ok(Some((memory, edges, has_more)))
    }

    /// PATCH: replace the content when the memory exists in `scope`/`project`
    /// and (with `if_match`) its current ETag equals `if_match`. Atomic.
    pub fn patch(&self, id: u64, content: &str, scope: &str, project: &str, if_match: Option<&str>) -> Result<PatchOutcome> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
        let current: Option<(String, String, String)> = tx
            .query_row("SELECT scope, project, content FROM memories WHERE id = ?1", [id as i64], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()
            .map_err(db_err)?;
        let Some((cur_scope, cur_project, cur_content)) = current else { return Ok(PatchOutcome::NotFoundOrForbidden) };
        if cur_scope != scope || cur_project != project {
            return Ok(PatchOutcome::NotFoundOrForbidden);
        }
        if let Some(expected) = if_match {
            if expected.trim() != "*" && expected.trim() != etag_of(&cur_content) {
                return Ok(PatchOutcome::PreconditionFailed);
            }
        }
        tx.execute("UPDATE memories SET content = ?2 WHERE id = ?1", params![id as i64, content]).map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(PatchOutcome::Updated)
    }

    /// Overwrite a memory's content unconditionally (the `clobber` fault).
    pub fn set_content(&self, id: u64, content: &str) -> Result<bool> {
        let conn = self.lock();
        let n = conn.execute("UPDATE memories SET content = ?2 WHERE id = ?1", params![id as i64, content]).map_err(db_err)?;
        Ok(n == 1)
    }

    /// Set the lifecycle marker. Returns whether the memory exists.
    pub fn set_marker(&self, id: u64, marker: Marker) -> Result<bool> {
        let conn = self.lock();
        let n = conn.execute("UPDATE memories SET marker = ?2 WHERE id = ?1", params![id as i64, marker.as_str()]).map_err(db_err)?;
        Ok(n == 1)
    }

    /// Correct memory `id`: create `Source: correction` memory with the new
    /// content (same type, scope, project and importance; persona given),
    /// add the edge new -corrects-> old, and mark the old one eroded. One
    /// transaction. None when `id` does not exist.
    pub fn correct(&self, id: u64, content: &str, persona: Option<&str>, now_ms: i64) -> Result<Option<u64>> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
        let Some(old) = load_memory(&tx, id)? else { return Ok(None) };
        let new = NewMemory {
            kind: old.kind.clone(),
            scope: old.scope.clone(),
            project: old.project.clone(),
            persona: persona.unwrap_or(&old.persona).to_owned(),
            status: "active".into(),
            source: "correction".into(),
            created_ms: now_ms,
            importance: old.importance,
            confidence: 1.0,
            evidence: 1,
            basis: "correction".into(),
            content: content.to_owned(),
        };
        let new_id = insert_memory(&tx, &new)?;
        tx.execute("INSERT INTO relations (from_id, to_id, kind) VALUES (?1, ?2, 'corrects')", params![new_id as i64, id as i64])
            .map_err(db_err)?;
        tx.execute("UPDATE memories SET marker = 'eroded' WHERE id = ?1", [id as i64]).map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(Some(new_id))
    }

    /// Add the edge `from -kind-> to`. False when either memory is missing.
    pub fn relate(&self, from: u64, to: u64, kind: &str) -> Result<bool> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
        let exists = |id: u64| -> Result<bool> {
            tx.query_row("SELECT 1 FROM memories WHERE id = ?1", [id as i64], |_| Ok(())).optional().map(|o| o.is_some()).map_err(db_err)
        };
        if !exists(from)? || !exists(to)? {
            return Ok(false);
        }
        tx.execute("INSERT INTO relations (from_id, to_id, kind) VALUES (?1, ?2, ?3)", params![from as i64, to as i64, kind])
            .map_err(db_err)?;
        tx.commit().map_err(db_err)?;
        Ok(true)
    }

    /// Store a hive message; returns its id.
    pub fn send(&self, to: &str, from: &str, content: &str, now_ms: i64) -> Result<u64> {
        let conn = self.lock();
        conn.execute(
            "INSERT INTO messages (recipient, sender, content, created_ms) VALUES (?1, ?2, ?3, ?4)",
            params![to, from, content, now_ms],
        )
        .map_err(db_err)?;
        Ok(conn.last_insert_rowid() as u64)
    }

    /// Claim message `message_id` for `persona` (see [`lease`]). Atomic.
    pub fn claim(&self, message_id: u64, persona: &str, lease_seconds: u64, now_ms: i64, reap_after_ms: i64) -> Result<ClaimOutcome> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
        if !message_exists(&tx, message_id)? {
            return Ok(ClaimOutcome::UnknownMessage);
        }
        let current = load_lease(&tx, message_id)?;
        match lease::decide_claim(current.as_ref(), persona, lease_seconds, now_ms, reap_after_ms) {
            ClaimDecision::Grant(new) => {
                tx.execute(
                    "INSERT INTO leases (message_id, persona, expires_at_ms) VALUES (?1, ?2, ?3)
                     ON CONFLICT (message_id) DO UPDATE SET persona = excluded.persona, expires_at_ms = excluded.expires_at_ms",
                    params![message_id as i64, new.persona, new.expires_at_ms],
                )
                .map_err(db_err)?;
                tx.commit().map_err(db_err)?;
                Ok(ClaimOutcome::Claimed)
            }
            ClaimDecision::Refuse { reason, claimed_by, lease_expired } => Ok(ClaimOutcome::Refused { reason, claimed_by, lease_expired }),
        }
    }

    /// Release: Some(true) when `persona` held the (unreaped) lease and it is
    /// now removed, Some(false) otherwise, None for an unknown message.
    pub fn release(&self, message_id: u64, persona: &str, now_ms: i64, reap_after_ms: i64) -> Result<Option<bool>> {
        let mut conn = self.lock();
        let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate).map_err(db_err)?;
        if !message_exists(&tx, message_id)? {
            return Ok(None);
        }
        let current = load_lease(&tx, message_id)?;
        let released = lease::decide_release(current.as_ref(), persona, now_ms, reap_after_ms);
        if released || current.as_ref().is_some_and(|l| l.reaped(now_ms, reap_after_ms)) {
            tx.execute("DELETE FROM leases WHERE message_id = ?1", [message_id as i64]).map_err(db_err)?;
            tx.commit().map_err(db_err)?;
        }
        Ok(Some(released))
    }

    /// Ranked full-text search over the memories of `scope`/`project`
    /// (None: any) for `phrases` (from [`fts_phrases`], joined by OR): BM25,
    /// ties newest first, at most `limit` memories.
    ///
    /// A phrase of one word found in at least half of all memories carries
    /// no weight: BM25's idf is `ln((N - n + 0.5) / (n + 0.5)) <= 0` for it
    /// (FTS5 clamps that to 1e-6; here it is 0), so it only decides which
    /// memories match. The other (weighted) phrases are *rare* when they
    /// match at most [`RECALL_WINDOW`] memories, else *common*. Ranked, by
    /// FTS5's `bm25` of the weighted phrases (every score exactly the one
    /// FTS5 gives that row for the query of all weighted phrases): every
    /// memory matching a rare phrase, and every memory matching a common one
    /// that lies in the *window*, the newest memories up to the start of the
    /// newest [`RECALL_WINDOW`] matches of the densest common phrase. The
    /// other matches (older than the window, or only of weightless phrases)
    /// follow, newest first, read newest-first from the index and stopped at
    /// `limit`. So a query costs one document count per phrase, at most
    /// [`RECALL_WINDOW`] scored rows per phrase and `limit` rows, never a
    /// BM25 score for every match. N is bounded below by the largest id.
    /// When every weighted phrase is rare and none is weightless the answer
    /// is exactly [`Store::recall_exact`]'s.
    pub fn recall(&self, phrases: &[String], scope: Option<&str>, project: Option<&str>, limit: usize) -> Result<Vec<Memory>> {
        let conn = self.lock();
        let mut df = self.df.lock().unwrap_or_else(|p| p.into_inner());
        let ids = recall_ids(&conn, &mut df, phrases, scope, project, limit, RECALL_WINDOW)?;
        ids.into_iter().filter_map(|id| load_memory(&conn, id).transpose()).collect()
    }

    /// FTS5's own ranking of every match (`ORDER BY rank`, ties newest
    /// first), with no phrase left out: what [`Store::recall`] returns when
    /// no phrase is weightless (tests and the bench compare the two).
    pub fn recall_exact(&self, phrases: &[String], scope: Option<&str>, project: Option<&str>, limit: usize) -> Result<Vec<Memory>> {
        if phrases.is_empty() || limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self.lock();
        let ids = ranked_ids(&conn, &match_of(phrases), scope, project, i64::MIN, limit)?;
        ids.into_iter().filter_map(|id| load_memory(&conn, id).transpose()).collect()
    }

    /// The newest memories (by creation time, then id) created at or after
    /// `since_ms` in `scope`/`project` (None: any); at most `limit`.
    pub fn recent(&self, since_ms: i64, scope: Option<&str>, project: Option<&str>, limit: usize) -> Result<Vec<Memory>> {
        self.listed(
            "SELECT id FROM memories WHERE created_ms >= ?1 AND (?2 IS NULL OR scope = ?2) AND (?3 IS NULL OR project = ?3)
             ORDER BY created_ms DESC, id DESC LIMIT ?4",
            params![since_ms, scope, project, limit as i64],
        )
    }

    /// The most important live (unmarked) memories of `project` in any
    /// scope, most important first, then newest; at most `limit`.
    pub fn important(&self, project: &str, limit: usize) -> Result<Vec<Memory>> {
        self.listed(
            "SELECT id FROM memories WHERE project = ?1 AND marker = 'none' ORDER BY importance DESC, id DESC LIMIT ?2",
            params![project, limit as i64],
        )
    }

    /// How many memories `project` has, and how many of them are live (unmarked).
    pub fn counts(&self, project: &str) -> Result<(u64, u64)> {
        let conn = self.lock();
        conn.query_row("SELECT COUNT(*), COALESCE(SUM(marker = 'none'), 0) FROM memories WHERE project = ?1", [project], |r| {
            Ok((r.get::<_, i64>(0)?.max(0) as u64, r.get::<_, i64>(1)?.max(0) as u64))
        })
        .map_err(db_err)
    }

    fn listed(&self, sql: &str, args: impl rusqlite::Params) -> Result<Vec<Memory>> {
        let conn = self.lock();
        let ids: Vec<u64> = {
            let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
            let rows = stmt.query_map(args, |r| r.get::<_, i64>(0)).map_err(db_err)?;
            rows.map(|r| r.map(|id| id as u64)).collect::<rusqlite::Result<Vec<_>>>().map_err(db_err)?
        };
        ids.into_iter().filter_map(|id| load_memory(&conn, id).transpose()).collect()
    }

    /// The memories linked to `id` by `kind` edges: (`from` ids of edges
    /// into it, `to` ids of edges out of it), oldest edge first, at most
    /// `limit` each.
    pub fn linked(&self, id: u64, kind: &str, limit: usize) -> Result<(Vec<u64>, Vec<u64>)> {
        let conn = self.lock();
        let list = |sql: &str| -> Result<Vec<u64>> {
            let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
            let rows = stmt.query_map(params![id as i64, kind, limit as i64], |r| r.get::<_, i64>(0)).map_err(db_err)?;
            rows.map(|r| r.map(|v| v as u64)).collect::<rusqlite::Result<Vec<_>>>().map_err(db_err)
        };
        let into = list("SELECT from_id FROM relations WHERE to_id = ?1 AND kind = ?2 ORDER BY id LIMIT ?3")?;
        let out = list("SELECT to_id FROM relations WHERE from_id = ?1 AND kind = ?2 ORDER BY id LIMIT ?3")?;
        Ok((into, out))
    }

    /// Whether hive message `id` exists.
    pub fn message_exists(&self, id: u64) -> Result<bool> {
        let conn = self.lock();
        message_exists(&conn, id)
    }

    /// Remove every lease past its reap time; returns how many.
    pub fn reap(&self, now_ms: i64, reap_after_ms: i64) -> Result<usize> {
        let conn = self.lock();
        conn.execute("DELETE FROM leases WHERE expires_at_ms + ?2 <= ?1", params![now_ms, reap_after_ms]).map_err(db_err)
    }
}

/// `phrases` quoted and joined by OR: an FTS5 query.
fn match_of(phrases: &[String]) -> String {
    phrases.iter().map(|p| format!("\"{p}\"")).collect::<Vec<_>>().join(" OR ")
}

/// How many matches of a common phrase [`Store::recall`] scores (its window).
pub const RECALL_WINDOW: usize = 500;

/// [`Store::recall`]'s ids with the window as a parameter (tests use small ones).
fn recall_ids(
    conn: &Connection,
    df: &mut DfCache,
    phrases: &[String],
    scope: Option<&str>,
    project: Option<&str>,
    limit: usize,
    window: usize,
) -> Result<Vec<u64>> {
    if phrases.is_empty() || limit == 0 || window == 0 {
        return Ok(Vec::new());
    }
    let split = split_phrases(conn, df, phrases, window)?;
    let weighted: Vec<String> = split.rare.iter().chain(&split.common).cloned().collect();
    let mut ids: Vec<u64> = Vec::new();
    if split.common.is_empty() {
        if !weighted.is_empty() {
            ids = ranked_ids(conn, &match_of(&weighted), scope, project, i64::MIN, limit)?;
        }
    } else {
        // The window starts at the newest `window`-th match of the densest
        // common phrase: each common phrase has at most `window` matches in it.
        let mut cutoff = i64::MIN;
        for c in &split.common {
            cutoff = cutoff.max(nth_newest(conn, &match_of(std::slice::from_ref(c)), window)?);
        }
        // Scored rows as (bm25, id): the window, then the older matches of
        // rare phrases, with and without a common phrase. Every query below
        // names the weighted phrases in the same order (rare, then common),
        // so FTS5 computes every score with the same idfs in the same order:
        // equal scores are equal bits, and the tie rule (newest first) holds.
        let mut scored = scored_ids(conn, &match_of(&weighted), scope, project, Some(cutoff), None, Some(limit))?;
        if !split.rare.is_empty() {
            let (rare, common) = (match_of(&split.rare), match_of(&split.common));
            // Rows that also match a common phrase: the AND query scores all of it.
            let both = scored_ids(conn, &format!("({rare}) AND ({common})"), scope, project, None, Some(cutoff), None)?;
            // Rows of rare phrases only: the common phrases add exactly 0 to them.
            let only = scored_ids(conn, &format!("({rare}) NOT ({common})"), scope, project, None, Some(cutoff), None)?;
            scored.extend(both);
            scored.extend(only);
        }
        scored.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
        ids = scored.into_iter().take(limit).map(|(_, id)| id).collect();
    }
    // What is left: matches outside the ranked set (older than the window,
    // or of weightless phrases only), newest first. Every rare match is
    // ranked already; each phrase's newest matches, merged, are the newest of the OR.
    let rest: Vec<&String> = split.common.iter().chain(&split.weightless).collect();
    if ids.len() < limit && !rest.is_empty() {
        let want = limit + ids.len();
        let mut newest: Vec<u64> = Vec::new();
        for p in rest {
            newest.extend(newest_ids(conn, &match_of(std::slice::from_ref(p)), scope, project, want)?);
        }
        newest.sort_unstable_by(|a, b| b.cmp(a));
        newest.dedup();
        for id in newest {
            if ids.len() >= limit {
                break;
            }
            if !ids.contains(&id) {
                ids.push(id);
            }
        }
    }
    Ok(ids)
}

/// The ids of the best `limit` matches of `query` with rowid at least `from`, by BM25, ties newest first.
fn ranked_ids(conn: &Connection, query: &str, scope: Option<&str>, project: Option<&str>, from: i64, limit: usize) -> Result<Vec<u64>> {
    Ok(scored_ids(conn, query, scope, project, Some(from), None, Some(limit))?.into_iter().map(|(_, id)| id).collect())
}

/// (bm25, id) of the matches of `query` with `from <= rowid < below`, best
/// first (ties newest first), at most `limit` (None: all).
fn scored_ids(
    conn: &Connection,
    query: &str,
    scope: Option<&str>,
    project: Option<&str>,
    from: Option<i64>,
    below: Option<i64>,
    limit: Option<usize>,
) -> Result<Vec<(f64, u64)>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT f.rank, m.id FROM memories_fts f CROSS JOIN memories m ON m.id = f.rowid
             WHERE memories_fts MATCH ?1 AND f.rowid >= ?4 AND f.rowid < ?5
               AND (?2 IS NULL OR m.scope = ?2) AND (?3 IS NULL OR m.project = ?3)
             ORDER BY f.rank, m.id DESC LIMIT ?6",
        )
        .map_err(db_err)?;
    let limit = limit.map_or(-1, |l| l.min(i64::MAX as usize) as i64);
    let rows = stmt
        .query_map(params![query, scope, project, from.unwrap_or(i64::MIN), below.unwrap_or(i64::MAX), limit], |r| {
            Ok((r.get::<_, f64>(0)?, r.get::<_, i64>(1)? as u64))
        })
        .map_err(db_err)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().map_err(db_err)
}

/// The rowid of the `n`-th newest match of `query` (every project), or
/// `i64::MIN` when it has fewer matches.
fn nth_newest(conn: &Connection, query: &str, n: usize) -> Result<i64> {
    let mut stmt = conn
        .prepare_cached("SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rowid DESC LIMIT 1 OFFSET ?2")
        .map_err(db_err)?;
    let at: Option<i64> = stmt.query_row(params![query, n.saturating_sub(1) as i64], |r| r.get(0)).optional().map_err(db_err)?;
    Ok(at.unwrap_or(i64::MIN))
}

/// The ids of the newest `limit` matches of `query`: the index is read in
/// descending rowid order (FTS5 serves it without sorting) and stops at `limit`.
fn newest_ids(conn: &Connection, query: &str, scope: Option<&str>, project: Option<&str>, limit: usize) -> Result<Vec<u64>> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT m.id FROM memories_fts f CROSS JOIN memories m ON m.id = f.rowid
             WHERE memories_fts MATCH ?1 AND (?2 IS NULL OR m.scope = ?2) AND (?3 IS NULL OR m.project = ?3)
             ORDER BY f.rowid DESC LIMIT ?4",
        )
        .map_err(db_err)?;
    let rows = stmt.query_map(params![query, scope, project, limit as i64], |r| r.get::<_, i64>(0)).map_err(db_err)?;
    rows.map(|r| r.map(|id| id as u64)).collect::<rusqlite::Result<Vec<_>>>().map_err(db_err)
}

/// Most document frequencies [`DfCache`] keeps.
const DF_CACHE_ENTRIES: usize = 4096;

/// Document frequencies of recall phrases (by phrase and window: a phrase
/// of several words is counted only up to `window + 1`), valid for one
/// state of the index: its FTS5 structure record and the largest id.
#[derive(Debug, Default)]
struct DfCache {
    key: Option<(Vec<u8>, i64)>,
    counts: std::collections::HashMap<(String, usize), i64>,
}

/// The phrases of a recall query by document frequency, each list in query order.
#[derive(Debug, Default, PartialEq)]
struct Split {
    /// Weighted, in at most `window` memories.
    rare: Vec<String>,
    /// Weighted, in more than `window` memories.
    common: Vec<String>,
    /// One ASCII word in at least half of all memories.
    weightless: Vec<String>,
}

/// Split `phrases` by document frequency. A one-word ASCII phrase is one
/// FTS5 token (lowercase in the index), whose document frequency the
/// `fts5vocab` table counts in one pass over its doclist; it is weightless
/// when found in at least half of all memories. Any other phrase (several
/// words, or other letters) is never weightless; its matches are counted up
/// to `window + 1`, which is all rare/common needs.
fn split_phrases(conn: &Connection, df: &mut DfCache, phrases: &[String], window: usize) -> Result<Split> {
    let rows: i64 = conn.query_row("SELECT COALESCE(MAX(id), 0) FROM memories", [], |r| r.get(0)).map_err(db_err)?;
    // FTS5 rewrites its structure record (rowid 10 of its data table) on
    // every change of the index, by any connection: while it and the largest
    // id are unchanged, so is every document frequency.
    let structure: Option<Vec<u8>> =
        conn.query_row("SELECT block FROM memories_fts_data WHERE id = 10", [], |r| r.get(0)).optional().map_err(db_err)?;
    let key = structure.map(|s| (s, rows));
    if key.is_none() || df.key != key {
        df.counts.clear();
        df.key = key;
    }
    let mut vocab = conn.prepare_cached("SELECT doc FROM temp.memories_vocab WHERE term = ?1").map_err(db_err)?;
    let mut count = conn
        .prepare_cached("SELECT count(*) FROM (SELECT rowid FROM memories_fts WHERE memories_fts MATCH ?1 LIMIT ?2)")
        .map_err(db_err)?;
    let mut split = Split::default();
    for p in phrases {
        let one_word = !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric());
        let cached = df.counts.get(&(p.clone(), window)).copied();
        let docs: i64 = match cached {
            Some(n) => n,
            None if one_word => vocab.query_row([p.to_ascii_lowercase()], |r| r.get(0)).optional().map_err(db_err)?.unwrap_or(0),
            None => count.query_row(params![format!("\"{p}\""), window as i64 + 1], |r| r.get(0)).map_err(db_err)?,
        };
        if cached.is_none() && df.key.is_some() && df.counts.len() < DF_CACHE_ENTRIES {
            df.counts.insert((p.clone(), window), docs);
        }
        if one_word && rows > 0 && docs.saturating_mul(2) >= rows {
            split.weightless.push(p.clone());
        } else if docs > window as i64 {
            split.common.push(p.clone());
        } else {
            split.rare.push(p.clone());
        }
    }
    Ok(split)
}

/// Most words of a recall query that reach the index.
pub const MAX_QUERY_TERMS: usize = 32;

/// An FTS5 query from free text: each whitespace-separated chunk becomes a
/// quoted phrase of its letters and digits (so `CODEX_CURRENT_STATE_POINTER_V1`
/// matches those words in that order), phrases joined by OR and ranked by
/// BM25. No FTS5 syntax of the caller reaches SQLite. None when the text has
/// no letter or digit.
pub fn fts_query(text: &str) -> Option<String> {
    let phrases = fts_phrases(text);
    (!phrases.is_empty()).then(|| match_of(&phrases))
}

/// The phrases of [`fts_query`], unquoted (words separated by one space).
pub fn fts_phrases(text: &str) -> Vec<String> {
    text.split_whitespace()
        .map(|chunk| chunk.chars().map(|c| if c.is_alphanumeric() { c } else { ' ' }).collect::<String>())
        .map(|words| words.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|words| !words.is_empty())
        .take(MAX_QUERY_TERMS)
        .collect()
}

fn insert_memory(conn: &Connection, m: &NewMemory) -> Result<u64> {
    let mut stmt = conn
        .prepare_cached(
            "INSERT INTO memories (type, scope, project, persona, status, source, created_ms, importance, confidence, evidence, basis, marker, content)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, 'none', ?12)",
        )
        .map_err(db_err)?;
    stmt.execute(params![
        m.kind,
        m.scope,
        m.project,
        m.persona,
        m.status,
        m.source,
        m.created_ms,
        m.importance,
        m.confidence,
        m.evidence as i64,
        m.basis,
        m.content
    ])
    .map_err(db_err)?;
    Ok(conn.last_insert_rowid() as u64)
}

fn load_memory(conn: &Connection, id: u64) -> Result<Option<Memory>> {
    let Ok(key) = i64::try_from(id) else { return Ok(None) };
    let mut stmt = conn
        .prepare_cached(
            "SELECT type, scope, project, persona, status, source, created_ms, importance, confidence, evidence, basis, marker, content
             FROM memories WHERE id = ?1",
        )
        .map_err(db_err)?;
    stmt.query_row([key], |r| {
        let marker: String = r.get(11)?;
        Ok(Memory {
            id,
            kind: r.get(0)?,
            scope: r.get(1)?,
            project: r.get(2)?,
            persona: r.get(3)?,
            status: r.get(4)?,
            source: r.get(5)?,
            created_ms: r.get(6)?,
            importance: r.get(7)?,
            confidence: r.get(8)?,
            evidence: r.get::<_, i64>(9)?.max(0) as u64,
            basis: r.get(10)?,
            // The CHECK constraint keeps this to the three words.
            marker: Marker::parse(&marker).unwrap_or(Marker::None),
            content: r.get(12)?,
        })
    })
    .optional()
    .map_err(db_err)
}

fn message_exists(conn: &Connection, id: u64) -> Result<bool> {
    let Ok(key) = i64::try_from(id) else { return Ok(false) };
    conn.query_row("SELECT 1 FROM messages WHERE id = ?1", [key], |_| Ok(())).optional().map(|o| o.is_some()).map_err(db_err)
}

fn load_lease(conn: &Connection, message_id: u64) -> Result<Option<Lease>> {
    conn.query_row("SELECT persona, expires_at_ms FROM leases WHERE message_id = ?1", [message_id as i64], |r| {
        Ok(Lease { persona: r.get(0)?, expires_at_ms: r.get(1)? })
    })
    .optional()
    .map_err(db_err)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn sample(content: &str) -> NewMemory {
        NewMemory {
            kind: "note".into(),
            scope: "project".into(),
            project: "Codex".into(),
            persona: "codex".into(),
            status: "active".into(),
            source: "mcp".into(),
            created_ms: 0,
            importance: 0.5,
            confidence: 1.0,
            evidence: 1,
            basis: "observed".into(),
            content: content.into(),
        }
    }

    fn temp() -> (tempfile::TempDir, std::path::PathBuf) {
        let d = tempfile::tempdir().unwrap();
        std::fs::set_permissions(d.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let p = d.path().join("kijito.db");
        (d, p)
    }

    #[test]
    fn ids_are_never_reused_and_survive_reopen() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
        assert_eq!(store.create_memory(&sample("a")).unwrap(), 1);
        assert_eq!(store.create_memory(&sample("b")).unwrap(), 2);
        store.lock().execute("DELETE FROM memories WHERE id = 2", []).unwrap();
        drop(store);
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.create_memory(&sample("c")).unwrap(), 3);
        assert_eq!(store.memory(1).unwrap().unwrap().content, "a");
    }

    #[test]
    fn patch_is_scoped_and_compare_and_swap() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        let id = store.create_memory(&sample("old")).unwrap();
        assert_eq!(store.patch(id, "x", "project", "Other", None).unwrap(), PatchOutcome::NotFoundOrForbidden);
        assert_eq!(store.patch(99, "x", "project", "Codex", None).unwrap(), PatchOutcome::NotFoundOrForbidden);
        assert_eq!(store.patch(id, "x", "project", "Codex", Some(&etag_of("stale"))).unwrap(), PatchOutcome::PreconditionFailed);
        assert_eq!(store.memory(id).unwrap().unwrap().content, "old");
        assert_eq!(store.patch(id, "new", "project", "Codex", Some(&etag_of("old"))).unwrap(), PatchOutcome::Updated);
        assert_eq!(store.memory(id).unwrap().unwrap().content, "new");
    }

    #[test]
    fn correct_erodes_and_links() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        let old = store.create_memory(&sample("wrong")).unwrap();
        let new = store.correct(old, "right", None, 5).unwrap().unwrap();
        assert_eq!(store.memory(old).unwrap().unwrap().marker, Marker::Eroded);
        let (m, edges, more) = store.memory_with_edges(new).unwrap().unwrap();
        assert_eq!(m.source, "correction");
        assert_eq!(edges, vec![Edge { kind: "corrects".into(), to: old, preview: "wrong".into() }]);
        assert!(!more);
        assert_eq!(store.correct(999, "x", None, 5).unwrap(), None);
        assert_eq!(store.linked(old, "corrects", 10).unwrap(), (vec![new], vec![]));
        assert_eq!(store.linked(new, "corrects", 10).unwrap(), (vec![], vec![old]));
        assert_eq!(store.linked(new, "relates_to", 10).unwrap(), (vec![], vec![]));
    }

    #[test]
    fn recall_ranks_full_text_and_follows_edits() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        let a = store.create_memory(&sample("CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW: finish the MCP server")).unwrap();
        let b = store.create_memory(&sample("a lesson about resume scripts")).unwrap();
        let mut other = sample("CODEX_CURRENT_STATE_POINTER_V1 of another project");
        other.project = "Other".into();
        store.create_memory(&other).unwrap();
        assert_eq!(
            fts_query("CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW").unwrap(),
            "\"CODEX CURRENT STATE POINTER V1\" OR \"RESUME\" OR \"NOW\""
        );
        let q = fts_phrases("CODEX_CURRENT_STATE_POINTER_V1 RESUME NOW");
        let hits: Vec<u64> = store.recall(&q, Some("project"), Some("Codex"), 10).unwrap().iter().map(|m| m.id).collect();
        assert_eq!(hits, vec![a, b]);
        assert_eq!(store.recall(&q, None, None, 10).unwrap().len(), 3);
        assert_eq!(store.recall(&q, Some("project"), Some("Codex"), 1).unwrap().len(), 1);
        // The index follows content changes (PATCH, clobber) and corrections.
        store.set_content(b, "nothing relevant").unwrap();
        assert_eq!(store.recall(&fts_phrases("lesson"), None, None, 10).unwrap(), vec![]);
        let c = store.correct(a, "RESUME LATER", None, 9).unwrap().unwrap();
        let hits: Vec<u64> = store.recall(&fts_phrases("later"), None, None, 10).unwrap().iter().map(|m| m.id).collect();
        assert_eq!(hits, vec![c]);
        // Caller syntax never reaches FTS5.
        for hostile in ["\"", "NEAR(a b)", "a* OR -b", "col:x", "^x", "(((", "AND"] {
            store.recall(&fts_phrases(hostile), None, None, 5).unwrap();
            store.recall_exact(&fts_phrases(hostile), None, None, 5).unwrap();
        }
        assert_eq!(fts_query("  _-_ ** "), None);
    }

    #[test]
    fn weightless_words_sparse_in_the_project_are_still_found_newest_first() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        // "common" is in most memories overall, but in the project only in
        // its 5 oldest: read newest-first from the index, they are still found.
        let mut old = Vec::new();
        for i in 0..5 {
            old.push(store.create_memory(&sample(&format!("common old {i}"))).unwrap());
        }
        let batch: Vec<NewMemory> = (0..300)
            .map(|i| {
                let mut m = sample(&format!("common elsewhere {i}"));
                m.project = "Other".into();
                m
            })
            .chain((0..100).map(|i| sample(&format!("unrelated {i}"))))
            .collect();
        store.create_memories(&batch).unwrap();
        let q = vec!["common".to_owned()];
        let newest_first: Vec<u64> = old.iter().rev().copied().collect();
        let got: Vec<u64> = store.recall(&q, None, Some("Codex"), 5).unwrap().iter().map(|m| m.id).collect();
        assert_eq!(got, newest_first);
        let got: Vec<u64> = store.recall(&q, None, Some("Codex"), 3).unwrap().iter().map(|m| m.id).collect();
        assert_eq!(got, newest_first[..3]);
    }

    #[test]
    fn weightless_words_decide_membership_and_ranking_is_exact_otherwise() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        // 40 memories: "common" in 30 (at least half: weightless), "mid" in 12
        // and "rare" in 5 (weighted); every 4th one in another project.
        let mut ids = Vec::new();
        for i in 0..40u64 {
            let mut words = vec![format!("filler{i}")];
            if i % 4 != 3 {
                words.push("common".into());
            }
            if i % 10 < 3 {
                words.push("mid".into());
                if i % 2 == 0 {
                    words.push("mid".into());
                }
            }
            if i % 8 == 0 {
                words.push("rare".into());
            }
            let mut m = sample(&words.join(" "));
            if i % 4 == 1 {
                m.project = "Other".into();
            }
            ids.push(store.create_memory(&m).unwrap());
        }
        let p = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let got = |m: Vec<Memory>| m.into_iter().map(|m| m.id).collect::<Vec<u64>>();
        // No weightless phrase: exactly FTS5's ranking, at every limit and filter.
        for limit in [1, 3, 10, 50] {
            for project in [Some("Codex"), None] {
                let q = p(&["rare", "mid", "filler7"]);
                assert_eq!(
                    got(store.recall(&q, None, project, limit).unwrap()),
                    got(store.recall_exact(&q, None, project, limit).unwrap()),
                    "{limit} {project:?}"
                );
            }
        }
        // Only a weightless word: the newest matches of the project.
        // Codex memories with "common", newest first.
        let commons: Vec<u64> = (0..40usize).rev().filter(|i| i % 4 != 3 && i % 4 != 1).map(|i| ids[i]).collect();
        let newest = commons[..5].to_vec();
        assert_eq!(got(store.recall(&p(&["COMMON"]), None, Some("Codex"), 5).unwrap()), newest);
        // Mixed: every weighted match in exact order first, then the newest weightless-only ones.
        let rare = got(store.recall_exact(&p(&["rare"]), None, Some("Codex"), 50).unwrap());
        assert!(!rare.is_empty() && rare.len() < 10);
        let mixed = got(store.recall(&p(&["rare", "common"]), None, Some("Codex"), 10).unwrap());
        assert_eq!(mixed[..rare.len()], rare[..]);
        let rest: Vec<u64> = commons.iter().copied().filter(|id| !rare.contains(id)).collect();
        assert_eq!(mixed.len(), 10);
        assert_eq!(mixed[rare.len()..], rest[..10 - rare.len()]);
        // Membership is the same as the exact query's.
        let mut a = got(store.recall(&p(&["rare", "common"]), None, Some("Codex"), 50).unwrap());
        let mut b = got(store.recall_exact(&p(&["rare", "common"]), None, Some("Codex"), 50).unwrap());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn common_phrases_are_ranked_in_their_window_rare_ones_always() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        // 160 memories: "omni" in 70 % (weightless), "alpha" in 35 % and
        // "beta" in 25 % (common for a window of 8), "gamma" in 5 (rare, two
        // of them old); repeated words and fillers of varying length so BM25
        // scores differ, and exact duplicates so some tie.
        let mut gamma = Vec::new();
        for i in 0..160u64 {
            let mut words = vec![format!("filler{i}")];
            for f in 0..(i % 5) {
                words.push(format!("pad{f}"));
            }
            if i % 10 < 7 {
                words.push("omni".into());
            }
            if i % 20 < 7 {
                words.push("alpha".into());
                if i % 3 == 0 {
                    words.push("alpha".into());
                }
            }
            if i % 4 == 1 {
                words.push("beta".into());
            }
            let is_gamma = [3, 11, 150, 155, 158].contains(&i);
            if is_gamma {
                words.push("gamma".into());
            }
            let content = if i % 40 == 39 { "alpha beta omni".to_owned() } else { words.join(" ") };
            let mut m = sample(&content);
            if i % 3 == 2 {
                m.project = "Other".into();
            }
            let id = store.create_memory(&m).unwrap();
            if is_gamma {
                gamma.push(id);
            }
        }
        let p = |words: &[&str]| words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>();
        let ids = |m: Vec<Memory>| m.into_iter().map(|m| m.id).collect::<Vec<u64>>();
        let window = 8;
        let query = p(&["alpha", "gamma", "omni", "beta"]);
        let split = split_phrases(&store.lock(), &mut DfCache::default(), &query, window).unwrap();
        assert_eq!(split, Split { rare: p(&["gamma"]), common: p(&["alpha", "beta"]), weightless: p(&["omni"]) });
        // The window: from the 8th newest match of the denser common phrase.
        let cutoff = ["alpha", "beta"]
            .iter()
            .map(|c| {
                let mut m = ids(store.recall_exact(&p(&[c]), None, None, 1000).unwrap());
                m.sort_unstable_by(|a, b| b.cmp(a));
                m[window - 1]
            })
            .max()
            .unwrap();
        for project in [Some("Codex"), None] {
            // Reference: FTS5's exact ranking of the weighted phrases (rare
            // first, as recall names them), kept where recall ranks.
            let exact = ids(store.recall_exact(&p(&["gamma", "alpha", "beta"]), None, project, 1000).unwrap());
            let ranked: Vec<u64> = exact.iter().copied().filter(|id| *id >= cutoff || gamma.contains(id)).collect();
            assert!(ranked.iter().any(|id| *id < cutoff), "an old rare match is ranked");
            let mut rest: Vec<u64> = ids(store.recall_exact(&p(&["alpha", "beta", "omni"]), None, project, 1000).unwrap())
                .into_iter()
                .filter(|id| !ranked.contains(id))
                .collect();
            rest.sort_unstable_by(|a, b| b.cmp(a));
            let expected: Vec<u64> = ranked.iter().chain(&rest).copied().collect();
            for limit in [1, 3, 10, 40, 1000] {
                let got = recall_ids(&store.lock(), &mut DfCache::default(), &query, None, project, limit, window).unwrap();
                assert_eq!(got, expected[..limit.min(expected.len())], "{limit} {project:?}");
            }
            // A window as large as the store: exactly FTS5's ranking, then the weightless tail.
            let got = recall_ids(&store.lock(), &mut DfCache::default(), &query, None, project, 1000, 1000).unwrap();
            assert_eq!(got[..exact.len()], exact[..], "{project:?}");
        }
        // The default window gives the same answer as the exact query when nothing is common.
        assert_eq!(
            ids(store.recall(&p(&["gamma", "alpha"]), None, None, 50).unwrap()),
            ids(store.recall_exact(&p(&["gamma", "alpha"]), None, None, 50).unwrap())
        );
    }

    #[test]
    fn cached_document_frequencies_follow_every_change_of_the_index() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        let ids: Vec<u64> = (0..10).map(|i| store.create_memory(&sample(if i < 4 { "solo x" } else { "other y" })).unwrap()).collect();
        let q = vec!["solo".to_owned()];
        let split = |s: &Store| {
            let conn = s.lock();
            let mut df = s.df.lock().unwrap();
            split_phrases(&conn, &mut df, &q, 2).unwrap()
        };
        // In 4 of 10: weighted, and common for a window of 2.
        assert_eq!(split(&store).common, q);
        assert_eq!(store.df.lock().unwrap().counts.get(&("solo".to_owned(), 2)), Some(&4));
        assert_eq!(split(&store).common, q);
        // Another connection (`serve` beside `mcp`) changes one content; the largest id stays.
        let other = Store::open(&path).unwrap();
        other.set_content(ids[9], "solo now").unwrap();
        assert_eq!(split(&store).weightless, q, "in 5 of 10: weightless");
        other.set_content(ids[9], "gone").unwrap();
        assert_eq!(split(&store).common, q);
        store.set_marker(ids[0], Marker::Faded).unwrap();
        store.correct(ids[8], "solo corrected", None, 1).unwrap().unwrap();
        assert_eq!(split(&store).common, q, "in 5 of 11");
        assert_eq!(store.recall(&q, None, None, 10).unwrap().len(), 5);
    }

    #[test]
    fn a_v1_database_is_migrated_and_indexed() {
        let (_d, path) = temp();
        {
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(MIGRATIONS[0]).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO memories (type, scope, project, persona, status, source, created_ms, importance, confidence, evidence, basis, marker, content)
                 VALUES ('note', 'project', 'Codex', 'codex', 'active', 'mcp', 0, 0.5, 1, 1, 'observed', 'none', 'written by v1')",
                [],
            )
            .unwrap();
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let store = Store::open(&path).unwrap();
        assert_eq!(store.schema_version().unwrap(), SCHEMA_VERSION);
        assert_eq!(store.recall(&fts_phrases("v1"), None, None, 5).unwrap()[0].content, "written by v1");
    }

    #[test]
    fn recent_and_important_lists() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        let mut old = sample("old");
        old.created_ms = 1_000;
        let old = store.create_memory(&old).unwrap();
        let mut new = sample("new");
        new.created_ms = 5_000;
        new.importance = 0.9;
        let new = store.create_memory(&new).unwrap();
        let ids = |v: Vec<Memory>| v.iter().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(ids(store.recent(0, Some("project"), Some("Codex"), 10).unwrap()), vec![new, old]);
        assert_eq!(ids(store.recent(2_000, None, None, 10).unwrap()), vec![new]);
        assert_eq!(ids(store.important("Codex", 10).unwrap()), vec![new, old]);
        store.set_marker(new, Marker::Faded).unwrap();
        assert_eq!(ids(store.important("Codex", 10).unwrap()), vec![old]);
        assert_eq!(store.counts("Codex").unwrap(), (2, 1));
        assert_eq!(store.create_memories(&[]).unwrap(), None);
        let (first, last) = store.create_memories(&[sample("x"), sample("y"), sample("z")]).unwrap().unwrap();
        assert_eq!((first, last), (new + 1, new + 3));
        assert_eq!(store.recall(&fts_phrases("y"), None, None, 5).unwrap()[0].id, new + 2);
        assert_eq!(store.counts("Codex").unwrap(), (5, 4));
    }

    #[test]
    fn claims_follow_the_lease_rules() {
        let (_d, path) = temp();
        let store = Store::open(&path).unwrap();
        assert_eq!(store.claim(1, "codex", 10, 0, 1000).unwrap(), ClaimOutcome::UnknownMessage);
        let m = store.send("codex", "codex", "mutex", 0).unwrap();
        assert_eq!(store.claim(m, "codex", 10, 0, 1000).unwrap(), ClaimOutcome::Claimed);
        assert_eq!(
            store.claim(m, "other", 10, 10_500, 1000).unwrap(),
            ClaimOutcome::Refused { reason: Reason::AlreadyClaimed, claimed_by: "codex".into(), lease_expired: true }
        );
        assert_eq!(store.release(m, "other", 10_500, 1000).unwrap(), Some(false));
        assert_eq!(store.claim(m, "other", 10, 11_000, 1000).unwrap(), ClaimOutcome::Claimed);
        assert_eq!(store.release(m, "other", 11_001, 1000).unwrap(), Some(true));
        assert_eq!(store.release(m, "other", 11_002, 1000).unwrap(), Some(false));
        assert_eq!(store.release(77, "other", 0, 1000).unwrap(), None);
    }
}
