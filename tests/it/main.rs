//! The one integration-test harness of the root package (docs/testing.md):
//! every test file is a module of this binary, and [`support`] is the one
//! support module they share (tests/support/, also used by the benches).

#[path = "../support/mod.rs"]
mod support;

mod architecture;
mod cli_conventions;
mod command_guard;
mod compact_codex;
mod compact_tmux;
mod consent_host;
mod consent_key;
mod consent_token;
mod doc_examples;
mod full_cycle;
mod gate_ledger;
mod gate_limits;
mod gate_witness;
mod hardening_guard;
mod hardening_local;
mod hardening_proxy;
mod hardening_publish;
mod hardening_record;
mod hardening_small;
mod harness_layout;
mod hook_size;
mod hooks;
mod hooks_new_turn;
mod hooks_nudge;
mod hooks_reentry;
mod hooks_wake;
mod install_layout;
mod kijito_local;
mod kijito_local_mcp;
mod memory_latch;
mod memory_latch_consent;
mod memory_latch_governance;
mod memory_latch_knobs;
mod memory_latch_lib;
mod memory_latch_pii;
mod memory_latch_sign;
mod memory_latch_wallet;
mod pointer_corpus;
mod pointer_digest;
mod pointer_publish;
mod pointer_snapshot;
mod policy_action_hash;
mod policy_user_file;
mod pretool_policy;
mod qa_gate;
mod rendering_fixtures;
mod report;
mod setup_doctor;
mod skill_commands;
mod skills;
mod summary_carried;
mod token_secrecy;
mod viewer;
mod wake_check;
mod wake_latch_index;
