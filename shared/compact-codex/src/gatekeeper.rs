//! The adapter's side of the QA state (kijito_compact::trigger): which thread
//! has a pending request for this adapter, whether it may be sent now, and
//! how a sent request ends.

use kijito_compact::trigger::{self, Request, RequestState, Via, ViaKind};
use kijito_gate::QaDir;
use kijito_protocol::error::Result;
use kijito_protocol::ids::{AbsPath, SessionId};

/// What to do about one thread's request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nothing to send (no pin to this adapter, no pending request, kill
    /// switch on).
    Nothing,
    /// Send now; the request (already moved to `sent` on disk).
    Send(Request),
    /// The request was failed without sending (the code).
    Failed(String),
}

/// The data dir and this adapter's id.
#[derive(Debug, Clone)]
pub struct Gatekeeper {
    pub data_dir: AbsPath,
    pub adapter_id: String,
}

impl Gatekeeper {
    fn qa(&self) -> Result<Option<QaDir>> {
        QaDir::existing(&self.data_dir)
    }

    /// Check `thread` (a thread the adapter saw on its connection, idle now)
    /// and, when a request for it is pending and every condition holds,
    /// record it as `sent` before the caller sends `thread/compact/start`.
    pub fn decide(&self, thread: &str, now_ms: i64) -> Result<Decision> {
        let Ok(s) = SessionId::parse(thread) else { return Ok(Decision::Nothing) };
        let Some(qa) = self.qa()? else { return Ok(Decision::Nothing) };
        let Some(pin) = trigger::read_pin(&qa, &s)? else { return Ok(Decision::Nothing) };
        match &pin.via {
            Via::CodexAppServer { adapter_id, .. } if *adapter_id == self.adapter_id => {}
            _ => return Ok(Decision::Nothing),
        }
        let Some(mut r) = trigger::read_request(&qa, &s)? else { return Ok(Decision::Nothing) };
        if r.state != RequestState::Pending || !matches!(r.via, ViaKind::CodexAppServer) {
            return Ok(Decision::Nothing);
        }
        if trigger::kill_switch_on(&self.data_dir) {
            return Ok(Decision::Nothing);
        }
        if let Err(e) = trigger::pass_still_valid(&qa, &r, now_ms) {
            let code = e.code().to_owned();
            trigger::finish_failed(&qa, &mut r, RequestState::Failed { code: code.clone() }, now_ms)?;
            return Ok(Decision::Failed(code));
        }
        r.state = RequestState::Sent;
        r.updated_at_ms = now_ms.max(r.requested_at_ms);
        trigger::write_request(&qa, &r)?;
        Ok(Decision::Send(r))
    }

    /// The claim record for a sent request: `Some(state)` once compacted.
    pub fn claimed(&self, r: &Request) -> Result<Option<RequestState>> {
        let Some(qa) = self.qa()? else { return Ok(None) };
        Ok(trigger::claim_for(&qa, r)?.map(|a| RequestState::Compacted { attested: a.attested, reason: a.reason }))
    }

    /// Record a final state of a sent request.
    pub fn finish(&self, r: &mut Request, state: RequestState, now_ms: i64) -> Result<()> {
        let qa = QaDir::open(&self.data_dir)?;
        match state {
            RequestState::Compacted { .. } => {
                r.state = state;
                r.updated_at_ms = now_ms.max(r.requested_at_ms);
                trigger::write_request(&qa, r)
            }
            other => trigger::finish_failed(&qa, r, other, now_ms),
        }
    }
}
