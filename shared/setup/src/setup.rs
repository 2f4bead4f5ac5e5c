//! `kijito-setup`: from the demo to your own pointer.
//!
//! Writes an owner-only config (`apiUrl`, `tokenFile`, `pointerId`,
//! `lockMessageId`), never over an existing one without `force`, after
//! checking the token file rules and verifying against the service: the
//! pointer is read (fence of the configured persona, current, a valid
//! manifest naming this pointer and lock, docs/protocol.md §4) and the lock's
//! lease is claimed and released once. With `create` (kijito-local only) it
//! first makes the lock message, one anchor from a file and the pointer: the
//! pointer must exist before its manifest can name it, so it is created with
//! a placeholder and then written once with a valid first manifest. Every
//! write uses `scope:"project"` (the only scope the protocol reads).

use crate::explain::{self, Context, Target};
use kijito_client::http::{is_clean_ack, Api, Claim, Method, Request, ReqwestTransport, Transport, MEMORY_TIMEOUT};
use kijito_client::pointer;
use kijito_client::token::Token;
use kijito_files::config::{self, ApiUrl, Config};
use kijito_files::private::{self, FileRules};
use kijito_protocol::error::{Error, Result};
use kijito_protocol::ids::{AbsPath, Digest, MemoryId, MessageId, Persona};
use kijito_protocol::manifest::{self, Anchor, Gate, Manifest, State, Task};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

/// Largest anchor file `--create` reads.
pub const MAX_ANCHOR_BYTES: u64 = 64 * 1024;
/// Lease asked for by the one verification claim (the protocol minimum).
pub const VERIFY_LEASE_SECONDS: u32 = 10;

/// Stable codes of this module.
pub mod codes {
    kijito_protocol::codes! {
        CONFIG_EXISTS ConfigExists = "config_exists",
        CREATE_NOT_LOCAL CreateNotLocal = "create_needs_kijito_local",
        ANCHOR_FILE AnchorFile = "anchor_file_invalid",
        TITLE Title = "title_invalid",
        SEED Seed = "create_failed",
        POINTER_NOT_CURRENT PointerNotCurrent = "pointer_not_current",
        POINTER_NOT_MANIFEST PointerNotManifest = "pointer_not_a_manifest",
        LEASE_HELD LeaseHeld = "lease_held",
        LEASE_NOT_RELEASED LeaseNotReleased = "lease_not_released",
    }
}

/// Which pointer to configure.
#[derive(Debug, Clone)]
pub enum Mode {
    /// An existing pointer and its lock message.
    Existing { pointer_id: MemoryId, lock_message_id: MessageId },
    /// Make lock, first anchor and pointer on kijito-local.
    Create { anchor_file: AbsPath, title: String },
}

/// `kijito-setup` arguments.
#[derive(Debug, Clone)]
pub struct SetupRequest {
    pub api_url: Option<ApiUrl>,
    pub token_file: Option<AbsPath>,
    pub mode: Mode,
    pub force: bool,
}

/// What setup did.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub config_path: PathBuf,
    pub api_url: ApiUrl,
    pub token_file: PathBuf,
    pub pointer_id: MemoryId,
    pub lock_message_id: MessageId,
    /// The anchor `--create` made.
    pub anchor_id: Option<MemoryId>,
    pub pointer_digest: Digest,
}

impl Outcome {
    /// One JSON line for stdout (no token, no memory content).
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "config": self.config_path.to_string_lossy(),
            "apiUrl": self.api_url.as_str(),
            "tokenFile": self.token_file.to_string_lossy(),
            "pointerId": self.pointer_id.get(),
            "lockMessageId": self.lock_message_id.get(),
            "pointerDigest": self.pointer_digest.as_str(),
        });
        if let (Some(a), Some(o)) = (self.anchor_id, v.as_object_mut()) {
            o.insert("anchorId".into(), a.get().into());
        }
        v
    }
}

/// The title rules of a manifest string (docs/protocol.md §4).
fn check_title(title: &str) -> Result<()> {
    let units = title.encode_utf16().count();
    if units == 0 || units > 2000 || title.trim() != title || title.chars().any(|c| c.is_control()) {
        return Err(Error::usage(codes::TITLE, "--title must be 1 to 2000 characters, without surrounding spaces or control characters"));
    }
    Ok(())
}

/// Run setup (real network through `ReqwestTransport`).
pub fn run(req: &SetupRequest) -> Result<Outcome> {
    if let Mode::Create { title, .. } = &req.mode {
        check_title(title)?;
    }
    let config_path = config::config_path()?;
    if std::fs::symlink_metadata(&config_path).is_ok() && !req.force {
        return Err(Error::new(
            codes::CONFIG_EXISTS,
            format!(
                "{} already exists; kijito-setup never overwrites a config silently: pass --force to replace it",
                config_path.display()
            ),
        ));
    }
    let api_url = match &req.api_url {
        Some(u) => u.clone(),
        None => ApiUrl::parse(config::DEFAULT_API_URL)?,
    };
    let token_file = match &req.token_file {
        Some(p) => p.as_path().to_owned(),
        None => config::default_token_file()?,
    };
    let persona = Persona::default();
    let project = config::DEFAULT_PROJECT.to_owned();
    let cx = |target| Context { api_url: &api_url, token_file: &token_file, persona: persona.as_str(), project: &project, target };
    let token = Token::read(&token_file).map_err(|e| explain::explain(e, &cx(Target::Other)))?;
    let api = Api::new(ReqwestTransport::new(api_url.clone(), &token)?, persona.clone(), project.clone());
    let (pointer_id, lock_message_id, anchor_id) = match &req.mode {
        Mode::Existing { pointer_id, lock_message_id } => (*pointer_id, *lock_message_id, None),
        Mode::Create { anchor_file, title } => {
            if !api_url.as_str().starts_with("http://") {
                return Err(Error::new(
                    codes::CREATE_NOT_LOCAL,
                    format!(
                        "--create seeds kijito-local only (apiUrl {} is not a loopback http URL); on the hosted service create the lock message, an anchor and the pointer (scope \"project\") with your Kijito tools, write the pointer's first manifest (docs/first-pointer.md), then run kijito-setup --pointer-id N --lock-message-id M",
                        api_url.as_str()
                    ),
                ));
            }
            let (p, l, a) = create(&api, anchor_file.as_path(), title).map_err(|e| explain::explain(e, &cx(Target::Other)))?;
            (p, l, Some(a))
        }
    };
    let digest = verify(&api, pointer_id, lock_message_id, &cx)?;
    let body = json!({
        "apiUrl": api_url.as_str(),
        "tokenFile": token_file.to_string_lossy(),
        "pointerId": pointer_id.get(),
        "lockMessageId": lock_message_id.get(),
    });
    let text =
        format!("{}\n", serde_json::to_string_pretty(&body).map_err(|e| Error::new(kijito_files::config::codes::INVALID, e.to_string()))?);
    Config::from_json(text.as_bytes())?; // what we write must load
    let dir = config_path.parent().ok_or_else(|| Error::new(kijito_files::config::codes::INVALID, "config path has no directory"))?;
    private::ensure_private_dir(dir).map_err(|e| e.context("config directory (it must be owner-only: chmod 700 it)"))?;
    kijito_files::private::write_atomic_unlocked(&config_path, text.as_bytes())?;
    Ok(Outcome { config_path, api_url, token_file, pointer_id, lock_message_id, anchor_id, pointer_digest: digest })
}

/// Read the pointer, check its manifest, claim and release the lease once.
fn verify<'a, T: Transport>(api: &Api<T>, pointer_id: MemoryId, lock: MessageId, cx: &dyn Fn(Target) -> Context<'a>) -> Result<Digest> {
    let read = pointer::read_pointer(api, pointer_id).map_err(|e| explain::explain(e, &cx(Target::Memory(pointer_id))))?;
    if !read.is_current() {
        return Err(Error::new(
            codes::POINTER_NOT_CURRENT,
            format!("memory {pointer_id} is not current ({:?}): a corrected or faded memory cannot be the pointer; give the id of the current one", read.lifecycle),
        ));
    }
    manifest::parse_manifest(read.content.as_bytes(), pointer_id, lock).map_err(|e| {
        Error::new(
            codes::POINTER_NOT_MANIFEST,
            format!(
                "memory {pointer_id} does not hold a first manifest for pointer {pointer_id} and lock {lock} ({}: {}); the pointer must exist first (created with scope \"project\"), then be written once with a manifest naming its own id and the lock message (docs/protocol.md §4); on kijito-local `kijito-setup --create` does both",
                e.code(),
                e.message()
            ),
        )
    })?;
    match api.claim(lock, VERIFY_LEASE_SECONDS).map_err(|e| explain::explain(e, &cx(Target::Message(lock))))? {
        Claim::Claimed => {}
        Claim::Refused { reason, claimed_by, lease_expired } => {
            // what happens next, exactly (docs/publish.md, "The lease"): a lease of this
            // persona is released with the one command that may; another's is never taken
            let next = if reason == "self_claimed" {
                format!(
                    "this persona holds it: if no publication of yours is running, a killed run (kijito-setup or pointer-publish) left it; release it with `{}` and run kijito-setup again",
                    kijito_client::publish::release_command(lock)
                )
            } else if lease_expired {
                "another persona holds it with an expired lease: every claim is refused until it releases it or the server reaps it; it is not yours to take: ask the user".to_owned()
            } else {
                "another session may be publishing: wait until it is done (a lease lasts at most 300 s) and run kijito-setup again"
                    .to_owned()
            };
            return Err(Error::new(
                codes::LEASE_HELD,
                format!("the lease of message {lock} is held ({reason}, by {claimed_by}, lease_expired={lease_expired}): {next}; never take a lease that reports lease_expired (docs/protocol.md §2)"),
            ));
        }
    }
    if !api.release(lock).map_err(|e| explain::explain(e, &cx(Target::Message(lock))))? {
        return Err(Error::new(codes::LEASE_NOT_RELEASED, format!("claimed message {lock} but the release answered released:false")));
    }
    Ok(read.digest)
}

fn post<T: Transport>(api: &Api<T>, path: &str, body: Value) -> Result<Value> {
    let r = api.transport.send(&Request {
        method: Method::Post,
        path: path.into(),
        body: Some(body.to_string().into_bytes()),
        if_match: None,
        timeout: MEMORY_TIMEOUT,
    })?;
    serde_json::from_slice(&r.body).map_err(|_| Error::new(codes::SEED, format!("{path} answered non-JSON")))
}

fn id_in(v: &Value, path: &str) -> Result<u64> {
    v.get("id")
        .and_then(Value::as_u64)
        .or_else(|| v.pointer("/result/id").and_then(Value::as_u64))
        .filter(|n| *n > 0)
        .ok_or_else(|| Error::new(codes::SEED, format!("{path} answered without an id")))
}

/// Create the lock message, the anchor and the pointer with its first
/// manifest. Returns (pointer, lock, anchor).
pub fn create<T: Transport>(api: &Api<T>, anchor_file: &Path, title: &str) -> Result<(MemoryId, MessageId, MemoryId)> {
    let (bytes, _) = private::read_checked(anchor_file, FileRules { owner_only: false, min_bytes: 1, max_bytes: MAX_ANCHOR_BYTES })
        .map_err(|e| Error::new(codes::ANCHOR_FILE, format!("--anchor-file {}: {} ({})", anchor_file.display(), e.message(), e.code())))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Error::new(codes::ANCHOR_FILE, format!("--anchor-file {} is not UTF-8", anchor_file.display())))?;
    if text.trim().is_empty() {
        return Err(Error::new(codes::ANCHOR_FILE, format!("--anchor-file {} is blank", anchor_file.display())));
    }
    let persona = api.persona.as_str();
    let memory = |content: &str, kind: &str| json!({"content": content, "persona": persona, "scope": "project", "project": api.project, "type": kind, "importance": 0.8});
    let lock =
        id_in(&post(api, "/api/send", json!({"to": persona, "from": "kijito-setup", "content": "kijito-qa pointer lock"}))?, "/api/send")?;
    let lock = MessageId::new(lock)?;
    let anchor = MemoryId::new(id_in(&post(api, "/api/memory", memory(&text, "decision"))?, "/api/memory")?)?;
    // The digest the verifiers will compute: of the content as the service renders it.
    let anchor_read = pointer::read_anchor(api, anchor)?;
    let pointer_id = MemoryId::new(id_in(
        &post(api, "/api/memory", memory("kijito-qa pointer (placeholder until its first manifest)", "note"))?,
        "/api/memory",
    )?)?;
    let name = anchor_file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let purpose: String = format!("first anchor (from {name})").chars().take(500).collect::<String>().trim().to_owned();
    let m = Manifest {
        pointer_id,
        lock_message_id: lock,
        state: State::Active,
        task: Task {
            title: title.to_owned(),
            next_action: Some("Read the anchors, then continue the task".to_owned()),
            done: vec![],
            remaining: vec![title.to_owned()],
            done_when: vec!["The task is finished and two context-free boots are green".to_owned()],
            gate: Gate { consecutive_greens: 0, artifact_digest: None },
        },
        anchors: vec![Anchor::Current { id: anchor, sha256: anchor_read.digest, purpose }],
    };
    m.validate()?;
    let ack = api.patch_memory(pointer_id, &m.to_canonical(), None)?;
    if !is_clean_ack(&ack, pointer_id) {
        return Err(Error::new(codes::SEED, format!("writing the first manifest of pointer {pointer_id} got an unexpected answer")));
    }
    Ok((pointer_id, lock, anchor))
}
