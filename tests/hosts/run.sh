#!/usr/bin/env bash
# Real-host end-to-end tests of the installed kijito-qa plugin (Codex CLI 0.169.0 and Claude
# Code 2.1.328 from npm, fake model servers on 127.0.0.1, loopback-only network namespace).
# See docs/testing.md (Real-host end-to-end tests). Exit 0 with "SKIP: <reason>" when the machine cannot run them (no
# network namespace, no node/npm/python3); non-zero on a real failure.
#
# run.sh [--prefix DIR] [--only SCENARIO[,SCENARIO...]] [--host codex|claude|both]
#   --prefix DIR  use an existing install (install.sh --prefix DIR) instead of installing into
#                 a temporary prefix
# Env: HOST_E2E_CACHE (npm cache of the hosts, default ${XDG_CACHE_HOME:-$HOME/.cache}/host-e2e,
#      outside the repository); KIJITO_E2E_STRICT=1 turns "binary not built yet" skips into
#      failures; KEEP=1 keeps the work dir.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
he2e="$here/host-e2e"
check="$here/scenarios/check.py"
seed="$here/scenarios/seed-pass.sh"

prefix="" only="" hosts="codex claude"
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --host) case "$2" in both) hosts="codex claude" ;; codex|claude) hosts="$2" ;; *) echo "bad --host" >&2; exit 2 ;; esac; shift 2 ;;
    -h|--help) sed -n '2,15p' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

say() { printf 'hosts-e2e: %s\n' "$*"; }
skip() { say "SKIP: $*"; exit 0; }
now() { date +%s.%N; }
took() { python3 -c 'import sys; print("%.1fs" % (float(sys.argv[2]) - float(sys.argv[1])))' "$1" "$(now)"; }

# ---- prerequisites (a missing one is a skip, not a failure)
command -v python3 >/dev/null 2>&1 || skip "python3 not found"
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) not found"
if ! unshare -n true 2>/dev/null && ! unshare -r -n true 2>/dev/null; then
  skip "cannot create a network namespace here (unshare -n / unshare -r -n fail); the hosts are never run unconfined"
fi
command -v node >/dev/null 2>&1 || skip "node not found (the hosts' npm launchers need it)"
command -v npm >/dev/null 2>&1 || skip "npm not found (needed to install the pinned hosts)"

t=$(now)
say "installing the pinned hosts into the cache (${HOST_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/host-e2e})"
if ! bindir=$("$he2e" install); then
  echo "hosts-e2e: FAIL: host-e2e install failed" >&2
  exit 1
fi
say "hosts ready in $(took "$t") ($bindir)"

work=$(mktemp -d -t kijito-hosts-e2e.XXXXXX)
cleanup() { if [ "${KEEP:-}" = 1 ]; then say "kept $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT

if [ -z "$prefix" ]; then
  prefix="$work/prefix"
  t=$(now)
  "$repo/install.sh" --prefix "$prefix" --host both > "$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2; echo "hosts-e2e: FAIL: install.sh failed" >&2; exit 1; }
  say "install.sh --prefix $prefix: $(took "$t")"
fi

failures=0 skipped=0 passed=0
report=()

t=$(now)
if HOME="$work" CLAUDE_CONFIG_DIR="$work/claude-validate" DISABLE_AUTOUPDATER=1 \
   unshare -n "$bindir/claude" plugin validate --strict "$prefix/claude" > "$work/validate.log" 2>&1; then
  say "claude plugin validate --strict $prefix/claude: passed ($(took "$t"))"; passed=$((passed + 1))
else
  cat "$work/validate.log"; say "FAIL: claude plugin validate --strict"; failures=$((failures + 1))
fi

t=$(now)
mkdir -p "$work/codex-plugin"
if unshare -n python3 "$here/scenarios/codex_plugin_check.py" "$bindir/codex" "$prefix/codex" "$work/codex-plugin" \
   > "$work/codex-plugin.log" 2>&1; then
  say "codex plugin install of $prefix/codex ($(took "$t")):"; cat "$work/codex-plugin.log"; passed=$((passed + 1))
else
  cat "$work/codex-plugin.log"; say "FAIL: codex plugin install of $prefix/codex"; failures=$((failures + 1))
fi

t=$(now)
mkdir -p "$work/doctor"
if [ ! -x "$prefix/codex/bin/kijito-doctor" ]; then
  say "SKIP kijito-doctor: not built by this workspace"; skipped=$((skipped + 1))
elif unshare -n python3 "$here/scenarios/doctor_hosts.py" "$bindir" "$prefix" "$work/doctor" > "$work/doctor.log" 2>&1; then
  say "kijito-doctor on the real hosts ($(took "$t")):"; cat "$work/doctor.log"; passed=$((passed + 1))
else
  cat "$work/doctor.log"; say "FAIL: kijito-doctor on the real hosts"; failures=$((failures + 1))
fi

hook_bins="precompact postcompact session-hook"
pass_bins="kijito-local pointer-digest pointer-publish pointer-snapshot qa-gate"
missing() {  # missing ROOT BIN...: print the ones not installed
  local root="$1" b out=""; shift
  for b in "$@"; do [ -x "$root/bin/$b" ] || out="$out $b"; done
  printf '%s' "${out# }"
}
wanted() { [ -z "$only" ] || [[ ",$only," == *",$1,"* ]]; }

# run_one HOST SCENARIO: one host-e2e run plus its checks
run_one() {
  local host="$1" name="$2" root="$prefix/$1" out="$work/out/$1-$2" need args=() kind extra=()
  wanted "$name" || return 0
  case "$name" in
    attested-manual|attested-auto|summary-carried|summary-dropped) need="$hook_bins $pass_bins" ;;
    context) need="$hook_bins kijito-context" ;;
    adapter-compact|adapter-long|plain-request) need="$hook_bins $pass_bins kijito-compact" ;;
    consent) need="$hook_bins memory-latch" ;;
    policy-consent) need="$hook_bins pretool-hook memory-latch" ;;
    sandbox) need="prompt-hook memory-latch kijito-setup" ;;
    policy-mcp) need="$hook_bins pretool-hook kijito-local" ;;
    *) need="$hook_bins" ;;
  esac
  local miss
  miss=$(missing "$root" $need)
  if [ -n "$miss" ]; then
    if [ "${KIJITO_E2E_STRICT:-}" = 1 ]; then
      say "FAIL $host $name: not built by this workspace: $miss"; failures=$((failures + 1))
    else
      say "SKIP $host $name: waits for binaries not built by this workspace yet: $miss"; skipped=$((skipped + 1))
    fi
    report+=("$host $name: skipped (missing $miss)")
    return 0
  fi
  case "$host" in
    codex) args=(codex --hooks "$root/hooks/hooks.json") ;;
    claude) args=(claude --plugin-dir "$root") ;;
  esac
  local sidefile="$work/side-effect-$host-$name"
  case "$name" in
    attested-manual) kind=attested; args+=(--scenario manual-compact --before-compact "$(printf '%q %q' "$seed" "$root")") ;;
    attested-auto) kind=attested
      # Claude Code auto-compacts only after the next prompt's UserPromptSubmit, and that new user turn
      # withdraws the pass the harness recorded before it (pass_invalidated_by_new_turn):
      # the compaction is re-entered UNATTESTED with that reason, on purpose. Codex compacts at the
      # start of the turn, before its UserPromptSubmit: still ATTESTED.
      [ "$host" = claude ] && kind=withdrawn
      args+=(--scenario auto-compact --before-compact "$(printf '%q %q' "$seed" "$root")") ;;
    unattested-manual) kind=unattested; args+=(--scenario manual-compact) ;;
    guard-deny) kind=deny; extra=(--side-effect "$sidefile")
      # a helper of this root with a shell tail appended: the grammar must refuse it
      args+=(--scenario tool --tool-command "$root/bin/pointer-digest --pointer-id 7; touch $sidefile") ;;
    guard-allow) kind=allow; args+=(--scenario tool --tool-command "echo kijito-e2e-unrelated") ;;
    # a real turn, a compaction, a real turn; then kijito-context on the host's own session file
    context) kind=context; args+=(--scenario manual-compact --after "$(printf '%q %q' "$here/scenarios/context-after.sh" "$root")") ;;
    # The pass of the adapter scenarios is recorded by the agent's own tool call in the turn that
    # requests the compaction (scenarios/record-request.sh after seed-request.sh): a pass recorded
    # between turns is withdrawn by the next turn (pass_invalidated_by_new_turn, docs/protocol.md §7).
    adapter-compact)  # codex only: the session runs under `kijito-compact codex` (headless client = host-e2e)
      kind=adapter
      local data='$XDG_STATE_HOME/kijito-qa-data'
      args+=(--scenario adapter-compact --before-compact "$(printf '%q %q' "$here/scenarios/seed-request.sh" "$root")"
        --app-server-cmd "exec $root/bin/kijito-compact codex --stdio-client --codex \"\$HOST_E2E_CODEX\" --data-dir \"$data\" --message-log \"\$HOST_E2E_OUT/adapter-messages.jsonl\""
        --tool-command "$here/scenarios/record-request.sh \$HOST_E2E_OUT {session_id} \$HOST_E2E_TRANSCRIPT_PATH"
        --after "$root/bin/kijito-compact status --session-id \"\$HOST_E2E_SESSION_ID\" --data-dir \"$data\" > \"\$HOST_E2E_OUT/compact-status.json\"") ;;
    adapter-long)  # codex only: 5 request -> compaction cycles in one session, each with a new pass
      kind=adapter-long
      local data='$XDG_STATE_HOME/kijito-qa-data'
      args+=(--scenario adapter-long --cycles 5 --before-compact "$(printf '%q %q' "$here/scenarios/seed-request.sh" "$root")"
        --app-server-cmd "exec $root/bin/kijito-compact codex --stdio-client --codex \"\$HOST_E2E_CODEX\" --data-dir \"$data\" --message-log \"\$HOST_E2E_OUT/adapter-messages.jsonl\""
        --tool-command "$here/scenarios/record-request.sh \$HOST_E2E_OUT {session_id} \$HOST_E2E_TRANSCRIPT_PATH") ;;
    consent)  # Claude Code only (the harness's prompts scenario); see scenarios/seed-consent.sh
      [ "$host" = claude ] || return 0
      local pdir="$work/consent-$host"; mkdir -p "$pdir"
      kind=consent; extra=(--side-effect "$pdir/token")
      args+=(--scenario prompts --prompt-file "$pdir/prompt-1" --prompt-file "$pdir/prompt-2"
             --before-first "$(printf '%q %q %q' "$here/scenarios/seed-consent.sh" "$root" "$pdir")"
             --after "$(printf '%q' "$root/bin/memory-latch") status --json > \"\$HOST_E2E_OUT/latch-status.json\"") ;;
    policy-consent)  # the agent's `rm -rf build` denied, consent requested with the command of
      # the deny reason, the user types the token they saw, the identical retry runs once, a repeat is
      # denied (scenarios/policy-seed.sh, policy_user.py, check_policy.py; lib/he2e/policy_driver.py)
      local pdir="$work/policy-consent-$host"; mkdir -p "$pdir"
      kind=policy-consent
      args+=(--scenario prompts --prompt-file "$pdir/prompt-1" --prompt-file "$pdir/prompt-2"
             --before-first "$(printf '%q %q %q consent %q' "$here/scenarios/policy-seed.sh" "$root" "$pdir" "$([ "$host" = codex ] && echo 'rm -r build' || echo 'rm -rf build')")"
             --before-each "$(printf '%q %q' "$here/scenarios/policy_user.py" "$pdir/prompt-2")"
             --after "{ [ -d build ] && echo present || echo absent; } > \"\$HOST_E2E_OUT/build-after.txt\"; cat .memory-latch/_manifest.md > \"\$HOST_E2E_OUT/latch-log.txt\"; $(printf '%q' "$root/bin/memory-latch") verify > \"\$HOST_E2E_OUT/latch-verify.txt\" 2>&1")
      [ "$host" = claude ] && args+=(--host-arg=--allowedTools=Bash) ;;
    policy-mcp)  # an MCP kijito_update of the configured pointer is denied (policy_pointer_write)
      local pdir="$work/policy-mcp-$host"; mkdir -p "$pdir"
      kind=policy-mcp
      if [ "$host" = codex ]; then  # policy-seed.sh registers the server in CODEX_HOME/config.toml
        args+=(--scenario prompts --prompt-file "$pdir/prompt-1" --prompt-file "$pdir/prompt-2"
               --before-first "$(printf '%q %q %q mcp' "$here/scenarios/policy-seed.sh" "$root" "$pdir")")
      else
      python3 -c 'import json,sys; json.dump({"mcpServers": {"kijito": {"type": "stdio", "command": sys.argv[2], "args": ["mcp", "--db", sys.argv[3]]}}}, open(sys.argv[1], "w"))' \
        "$pdir/mcp.json" "$root/bin/kijito-local" "$pdir/kijito.db"
      args+=(--scenario prompts --prompt-file "$pdir/prompt-1" --prompt-file "$pdir/prompt-2"
             --before-first "$(printf '%q %q %q mcp' "$here/scenarios/policy-seed.sh" "$root" "$pdir")"
             --host-arg=--mcp-config="$pdir/mcp.json" --host-arg=--strict-mcp-config
             --host-arg=--allowedTools=mcp__kijito__kijito_update)
      fi ;;
    plain-request)  # neither tmux nor the app-server adapter owns the session (Claude Code headless
      # `claude -p`; Codex: a plain app-server session, host-e2e the client), so the agent's
      # `kijito-compact request` after a real pass must answer no_safe_trigger
      kind=plain-request
      if [ "$host" = claude ]; then
        local pdir="$work/plain-$host"; mkdir -p "$pdir"; echo hello > "$pdir/prompt-1"
        args+=(--scenario prompts --prompt-file "$pdir/prompt-1" --prompt-file "$pdir/prompt-2" --host-arg=--allowedTools=Bash
               --before-compact "$(printf '%q %q %q' "$here/scenarios/plain-request.sh" "$root" "$pdir")"
               --after "$root/bin/kijito-compact status --session-id \"\$HOST_E2E_SESSION_ID\" --data-dir \"\$CLAUDE_CONFIG_DIR/plugins/data/kijito-qa-inline\" > \"\$HOST_E2E_OUT/compact-status.txt\" 2>&1 || true")
      else
        local data='$XDG_STATE_HOME/kijito-qa-data'
        args+=(--scenario plain-request --before-compact "$(printf '%q %q' "$here/scenarios/seed-request.sh" "$root")"
               --tool-command "$here/scenarios/record-request.sh \$HOST_E2E_OUT {session_id} \$HOST_E2E_TRANSCRIPT_PATH"
               --after "$root/bin/kijito-compact status --session-id \"\$HOST_E2E_SESSION_ID\" --data-dir \"$data\" > \"\$HOST_E2E_OUT/compact-status.txt\" 2>&1 || true")
      fi ;;
    summary-carried|summary-dropped)  # Claude Code only: the fake summariser keeps the kijito-* lines (or drops one)
      [ "$host" = claude ] || return 0
      if [ "$name" = summary-carried ]; then kind=summary-true; else kind=summary-false; extra=(--summary-drop kijito-snapshot-digest); fi
      args+=(--scenario manual-compact --summary-echo "${extra[@]}" --before-compact "$(printf '%q %q' "$seed" "$root")"
             --after "$(printf '%q' "$here/scenarios/summary-after.sh")"); extra=() ;;
    sandbox)  # Claude Code only: the OS sandbox as kijito-setup --sandbox --write sets it, no kijito-qa
      # hook installed (only the sandbox stands in the way): the helpers run outside it and work, the
      # agent's writes to kijito-qa's config, state, the latch, a forged transcript and ~/.bashrc fail,
      # its own run of prompt-hook confirms nothing (scenarios/sandbox-seed.sh, check_sandbox.py)
      [ "$host" = claude ] || return 0
      local pdir="$work/sandbox-$host"; mkdir -p "$pdir"; echo '{"hooks": {}}' > "$pdir/settings.json"
      kind=sandbox
      args=(claude --settings-hooks "$pdir/settings.json" --scenario prompts --host-arg=--allowedTools=Bash
            --before-first "$(printf '%q %q %q %q' "$here/scenarios/sandbox-seed.sh" "$root" "$prefix" "$pdir")"
            --after "ls -la > \"\$HOST_E2E_OUT/project-ls.txt\"; $(printf '%q' "$root/bin/memory-latch") verify --workspace \"\$PWD\" > \"\$HOST_E2E_OUT/latch-verify.txt\" 2>&1")
      local i; for i in 1 2 3 4 5 6 7 8 9 10; do args+=(--prompt-file "$pdir/prompt-$i"); done ;;
    plugin-options) kind=options
      # Claude Code userConfig: the ids come from the plugin options, no kijito-qa config file
      python3 -c 'import json,sys; json.dump({"hooks": {}, "pluginConfigs": {"kijito-qa@inline": {"options": {"pointer_id": 21813, "lock_message_id": 77}}}}, open(sys.argv[1], "w"))' "$work/options-settings.json"
      args+=(--scenario manual-compact --settings-hooks "$work/options-settings.json") ;;
  esac
  mkdir -p "$work/out"
  local t0 rc=0
  t0=$(now)
  "$he2e" "${args[@]}" --out "$out" --timeout 240 > "$out.log" 2>&1 || rc=$?
  local dt
  dt=$(took "$t0")
  if [ "$rc" -ne 0 ] && [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL $host $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1))
    report+=("$host $name: FAIL ($dt)")
    return 0
  fi
  say "$host $name ($dt):"
  local verdict=0
  if [[ "$kind" == policy-* ]]; then
    python3 "$here/scenarios/check_policy.py" "${kind#policy-}" "$out" "$root" "$host" ${pdir:+"$pdir"} || verdict=$?
  elif [ "$kind" = sandbox ]; then
    python3 "$here/scenarios/check_sandbox.py" "$out" || verdict=$?
  elif [ "$kind" = options ]; then
    python3 "$here/scenarios/plugin_options.py" "$out" 21813 77 || verdict=$?
  elif [[ "$kind" == summary-* ]]; then
    python3 "$here/scenarios/check_summary.py" "${kind#summary-}" "$out" "$root" || verdict=$?
  else
    python3 "$check" "$kind" "$out" "$root" "${extra[@]}" || verdict=$?
  fi
  if [ "$verdict" -eq 0 ]; then
    passed=$((passed + 1)); report+=("$host $name: ok ($dt)")
  else
    tail -n 20 "$out.log"
    [ -f "$out/before-compact.log" ] && { echo "--- before-compact.log"; tail -n 30 "$out/before-compact.log"; }
    say "FAIL $host $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1))
    report+=("$host $name: FAIL ($dt)")
  fi
}

# run_tui HOST SCENARIO: the tmux compaction adapter on the real TUI in a tmux pane
# (scenarios/compact-request.sh types the prompt whose tool call runs kijito-compact request;
# scenarios/check_compact.py checks the keys the pane received, the compaction and the re-entry).
run_tui() {
  local host="$1" name="$2" root="$prefix/$1" out="$work/out/$1-$2" args=() kind mode extra=()
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP $host $name: tmux not installed"; skipped=$((skipped + 1)); report+=("$host $name: skipped (no tmux)"); return 0; }
  local miss
  miss=$(missing "$root" $hook_bins $pass_bins kijito-compact)
  if [ -n "$miss" ]; then
    say "FAIL $host $name: not installed: $miss"; failures=$((failures + 1)); report+=("$host $name: FAIL (missing $miss)"); return 0
  fi
  local planned=""
  case "$name" in
    tmux-compact) kind=compacted mode=pass; extra=(--wait-compact 120 --after-prompt "after compact") ;;
    tmux-compact-nopass) kind=pass_missing mode=nopass ;;
    tmux-compact-daemon) kind=no_safe_trigger mode=pass ;;
    tmux-long)  # one session: 5 x (the agent's one tool call records a new pass and requests, the
      # adapter types /compact), then a turn that fills the context window (the fake model reports
      # 990000 input tokens) with no pass left: the host's own ceiling-time auto-compaction, UNATTESTED.
      # The record is in the same turn as the request (scenarios/record-request.sh): a pass the
      # harness recorded between turns would be withdrawn by the next prompt (pass_invalidated_by_new_turn).
      kind=long mode=seed planned=5
      extra=(--cycles "$planned"
        --then-prompt "Run this. HOST-E2E-RUN-TOOL: $here/scenarios/record-request.sh \$HOST_E2E_OUT {session_id} \$HOST_E2E_TRANSCRIPT_PATH"
        --wait-compact 120 --after-prompt "ceiling turn HOST-E2E-INPUT-TOKENS: 990000"
        --after-prompt "after the ceiling" --after-prompt "final prompt")
      # Codex: the session's auto-compaction limit, far above the 100 tokens the other turns report
      if [ "$host" = codex ]; then extra+=(--host-arg=-c --host-arg=model_auto_compact_token_limit=200000); fi ;;
  esac
  case "$host" in
    claude) args=(tui-claude --plugin-dir "$root" --host-arg=--permission-mode=acceptEdits --host-arg=--allowedTools=Bash) ;;
    codex) args=(tui-codex --hooks "$root/hooks/hooks.json" --host-arg=--sandbox=danger-full-access)
      # --no-daemon: in the default shared-daemon mode hooks may see another TUI's pane, so the
      # adapter refuses to pin (tmux-compact-daemon checks exactly that).
      [ "$name" = tmux-compact-daemon ] || args+=(--host-arg=--no-daemon) ;;
  esac
  mkdir -p "$work/out"
  local t0 rc=0 dt
  t0=$(now)
  "$he2e" "${args[@]}" --out "$out" --timeout 300 --prompt hello \
    --then "$(printf '%q %q %q' "$here/scenarios/compact-request.sh" "$root" "$mode")" "${extra[@]}" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL $host $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)"); return 0
  fi
  say "$host $name ($dt):"
  if python3 "$here/scenarios/check_compact.py" "$kind" "$out" "$root" $planned; then
    passed=$((passed + 1)); report+=("$host $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; [ -f "$out/then.log" ] && { echo "--- then.log"; tail -n 30 "$out/then.log"; }
    say "FAIL $host $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)")
  fi
}

# run_boots HOST: the QA skill's two cold boots by fresh verifier agents of the real host (Claude
# Code: Agent tool subagents; Codex: spawn_agent), then digest again and record; then the negative
# control (the fake main agent forks its conversation into the verifiers; the check must see it).
# `boots` also checks the PreToolUse hook's witness record (two distinct subagents, the
# pass bootsWitnessed true). `boots-main-refused` (its own --only name): the main agent runs the two
# boots itself; `qa-gate record` must refuse them (boot_by_main_agent), no pass.
# See scenarios/seed-boots.sh, lib/he2e/qa_driver.py and scenarios/check_boots.py.
run_boots() {
  local host="$1" root="$prefix/$1" v out rc t0 dt miss variants=()
  wanted boots && variants+=(boots boots-fork)
  wanted boots-main-refused && variants+=(boots-main-refused)
  [ "${#variants[@]}" -gt 0 ] || return 0
  miss=$(missing "$root" $hook_bins $pass_bins pretool-hook)
  if [ -n "$miss" ]; then say "FAIL $host boots: not installed: $miss"; failures=$((failures + 1)); report+=("$host boots: FAIL"); return 0; fi
  mkdir -p "$work/out"
  for v in "${variants[@]}"; do
    out="$work/out/$host-$v" rc=0 t0=$(now)
    "$he2e" "$host" $([ "$host" = codex ] && echo --hooks "$root/hooks/hooks.json" || echo --plugin-dir "$root" --host-arg=--allowedTools=Bash) \
      --scenario prompts --prompt-file "$out.prompt" --out "$out" --timeout 240 \
      --before-first "$(printf '%q %q %q %q' "$here/scenarios/seed-boots.sh" "$root" "$out.prompt" "${v#boots}")" \
      --after "$(printf '%q %q' "$here/scenarios/after-boots.sh" "$root")" > "$out.log" 2>&1 || rc=$?
    dt=$(took "$t0"); say "$host $v ($dt, host-e2e exit $rc):"
    if [ -f "$out/summary.json" ] && python3 "$here/scenarios/check_boots.py" "$out" "$root" "$host" $(case "$v" in boots-fork) echo --expect-fork ;; boots-main-refused) echo --expect-main ;; esac); then
      passed=$((passed + 1)); report+=("$host $v: ok ($dt)")
    else
      tail -n 20 "$out.log"; say "FAIL $host $v (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("$host $v: FAIL ($dt)")
    fi
  done
}

# run_agent HOST SCENARIO: the real TUI driven by its own agent (the fake model as the
# kijito-memory-qa skill, lib/he2e/qa_driver.py) taking every command from the hooks' own text;
# the harness types only what a person types (scenarios/agent_steps.py). The pointer is published
# before the host starts (--before-start), so SessionStart prints its commands.
#   agent-long:   5 cycles in one session, then the ceiling compaction (scenarios/check_agent.py long)
#   agent-typing: the user types `fix the bu` right after a Stop through an attached tmux client,
#                 then submits it; then the next cycle (scenarios/check_agent.py typing)
# Claude Code runs as the pane's own command (`tmux new-session -d claude ...`, --pane-host); Codex
# with --no-daemon, also as the pane's command (the npm launcher `codex` is the pane's process).
run_agent() {
  local host="$1" name="$2" root="$prefix/$1" out="$work/out/$1-$2" args=() mode
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP $host $name: tmux not installed"; skipped=$((skipped + 1)); report+=("$host $name: skipped (no tmux)"); return 0; }
  local miss
  miss=$(missing "$root" $hook_bins $pass_bins kijito-compact)
  if [ -n "$miss" ]; then
    say "FAIL $host $name: not installed: $miss"; failures=$((failures + 1)); report+=("$host $name: FAIL (missing $miss)"); return 0
  fi
  mode=${name#agent-}
  mkdir -p "$work/out"
  python3 "$here/scenarios/agent_steps.py" "$mode" "$root" "$out.steps.json"
  case "$host" in
    claude) args=(tui-claude --plugin-dir "$root" --host-arg=--permission-mode=acceptEdits --host-arg=--allowedTools=Bash) ;;
    codex) args=(tui-codex --hooks "$root/hooks/hooks.json" --host-arg=--sandbox=danger-full-access --host-arg=--no-daemon)
      # the session's auto-compaction limit, far above the 100 tokens the other turns report
      [ "$mode" != long ] || args+=(--host-arg=-c --host-arg=model_auto_compact_token_limit=200000) ;;
  esac
  local t0 rc=0 dt
  t0=$(now)
  "$he2e" "${args[@]}" --pane-host --out "$out" --timeout 600 --turn-timeout 150 \
    --before-start "$(printf '%q %q publish-only' "$seed" "$root")" --steps "$out.steps.json" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL $host $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)"); return 0
  fi
  say "$host $name ($dt):"
  if python3 "$here/scenarios/check_agent.py" "$mode" "$out" "$root"; then
    passed=$((passed + 1)); report+=("$host $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; [ -f "$out/then.log" ] && { echo "--- then.log"; tail -n 30 "$out/then.log"; }
    say "FAIL $host $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)")
  fi
}

# run_host_consent: Claude Code only, the real TUI in a tmux pane (consent mode host, docs/protocol.md
# §8a step 7a). The user's consent file says "host" and the workspace has a latch
# (scenarios/seed-host-consent.sh); the user asks for `rm -rf build`, the fake model calls Bash with
# it, the PreToolUse hook answers ask, the host shows its own dialog, the person (an attached tmux
# client) types 1, the call runs and PostToolUse records it (scenarios/check_host_consent.py).
run_host_consent() {
  local name=host-consent root="$prefix/claude" out="$work/out/claude-host-consent"
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP claude $name: tmux not installed"; skipped=$((skipped + 1)); report+=("claude $name: skipped (no tmux)"); return 0; }
  local miss
  miss=$(missing "$root" $hook_bins pretool-hook prompt-hook memory-latch)
  if [ -n "$miss" ]; then
    say "FAIL claude $name: not installed: $miss"; failures=$((failures + 1)); report+=("claude $name: FAIL (missing $miss)"); return 0
  fi
  mkdir -p "$work/out"
  python3 - "$out.steps.json" "$here/scenarios/after-host-consent.sh" <<'PY'
import json, sys
call = {"command": "rm -rf build", "description": "remove the build directory"}
steps = [{"attach": True},
         {"prompt": "please clean the build HOST-E2E-RUN-CALL: Bash " + json.dumps(call), "via": "client",
          "name": "rm", "answer": {"when": "Do you want to proceed", "keys": "1"}},
         {"run": sys.argv[2], "name": "keep"}]
json.dump(steps, open(sys.argv[1], "w"))
PY
  local t0 rc=0 dt
  t0=$(now)
  "$he2e" tui-claude --plugin-dir "$root" --host-arg=--allowedTools=Bash --out "$out" --timeout 300 \
    --before-start "$(printf '%q %q' "$here/scenarios/seed-host-consent.sh" "$root")" --steps "$out.steps.json" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL claude $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("claude $name: FAIL ($dt)"); return 0
  fi
  say "claude $name ($dt):"
  if python3 "$here/scenarios/check_host_consent.py" "$out" "$root"; then
    passed=$((passed + 1)); report+=("claude $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; say "FAIL claude $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("claude $name: FAIL ($dt)")
  fi
}

# The Claude Code TUI (tmux) with the OS sandbox as kijito-setup --sandbox writes it, no kijito-qa hook:
# the helper works, the config write and a `tmux if-shell` to the agent's own pane fail
# (docs/protocol.md §12; scenarios/sandbox-tui-seed.sh, check_sandbox_tui.py). acceptEdits: offline,
# the TUI's auto mode stops every other command on its "safety check unreachable" dialog.
run_sandbox_tui() {
  local name=sandbox-tui root="$prefix/claude" out="$work/out/claude-sandbox-tui"
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP claude $name: tmux not installed"; skipped=$((skipped + 1)); report+=("claude $name: skipped (no tmux)"); return 0; }
  local miss; miss=$(missing "$root" memory-latch kijito-setup)
  if [ -n "$miss" ]; then
    say "FAIL claude $name: not installed: $miss"; failures=$((failures + 1)); report+=("claude $name: FAIL (missing $miss)"); return 0
  fi
  mkdir -p "$work/out"; echo '{"hooks": {}}' > "$out.settings.json"
  local t0 rc=0 dt tmux_bin ml="$root/bin/memory-latch"
  tmux_bin=$(PATH=/usr/bin:/bin command -v tmux)
  t0=$(now)
  "$he2e" tui-claude --settings-hooks "$out.settings.json" --host-arg=--allowedTools=Bash --host-arg=--permission-mode=acceptEdits \
    --before-start "$(printf '%q %q %q' "$here/scenarios/sandbox-tui-seed.sh" "$root" "$prefix")" \
    --prompt "HOST-E2E-RUN-TOOL: $ml init --objective tui --next-step probe" \
    --prompt 'HOST-E2E-RUN-TOOL: cd $XDG_CONFIG_HOME/kijito-qa && echo {} > policy.json' \
    --prompt "HOST-E2E-RUN-TOOL: $tmux_bin if-shell true 'send-keys -l ACT-23456A'" \
    --prompt "HOST-E2E-RUN-TOOL: $ml status" \
    --out "$out" --timeout 250 > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL claude $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("claude $name: FAIL ($dt)"); return 0
  fi
  say "claude $name ($dt):"
  if python3 "$here/scenarios/check_sandbox_tui.py" "$out"; then
    passed=$((passed + 1)); report+=("claude $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; say "FAIL claude $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("claude $name: FAIL ($dt)")
  fi
}

# Codex 0.169 with its own sandbox as kijito-setup --sandbox --host codex --write sets it, and the
# helpers' prefix rules of --allow-helpers --write (docs/protocol.md §12): the real TUI in tmux, the
# throwaway config.toml without a sandbox_mode line (host-e2e --sandbox-mode none), so our setup
# writes it; the fake model runs one shell call per prompt (scenarios/sandbox-codex-seed.sh,
# sandbox_codex.py: the steps, which layer held each one, the files before and after, the doctor).
# Codex's workspace-write lets a command write /tmp (measured), so the run's HOME, XDG dirs and
# CODEX_HOME go under /var/tmp (host-e2e honours TMPDIR), as a user's home is not under /tmp; give
# an install --prefix outside /tmp too, else the prefix itself is writable to the agent.
#   sandbox-codex:       no kijito-qa hook installed: what the OS sandbox alone holds (kijito-setup's
#                        permission profile: .memory-latch read-only in the writable workspace)
#   sandbox-codex-hooks: the installed hooks.json too (the user's real setup): every attempt fails
run_sandbox_codex() {
  local name="$1" root="$prefix/codex" out="$work/out/codex-$1" variant hooks
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP codex $name: tmux not installed"; skipped=$((skipped + 1)); report+=("codex $name: skipped (no tmux)"); return 0; }
  local miss; miss=$(missing "$root" $hook_bins pretool-hook prompt-hook memory-latch kijito-setup kijito-doctor)
  if [ -n "$miss" ]; then
    say "FAIL codex $name: not installed: $miss"; failures=$((failures + 1)); report+=("codex $name: FAIL (missing $miss)"); return 0
  fi
  mkdir -p "$work/out"
  case "$name" in
    sandbox-codex) variant=os hooks="$out.hooks.json"; echo '{"hooks": {}}' > "$hooks" ;;
    *) variant=both hooks="$root/hooks/hooks.json" ;;
  esac
  local t0 rc=0 dt tmux_bin home_tmp
  tmux_bin=$(PATH=/usr/bin:/bin command -v tmux)
  home_tmp=$(mktemp -d /var/tmp/kijito-sbx.XXXXXX)
  case "$prefix" in /tmp/*) say "note: the prefix $prefix is under /tmp, which Codex's workspace-write lets the agent write" ;; esac
  echo '[]' > "$out.steps.json"  # written again by the seed, with the run's paths
  t0=$(now)
  TMPDIR="$home_tmp" "$he2e" tui-codex --hooks "$hooks" --sandbox-mode none --host-arg=--no-daemon --out "$out" --timeout 500 \
    --before-start "$(printf '%q %q %q %q %q %q' "$here/scenarios/sandbox-codex-seed.sh" "$root" "$prefix" "$variant" "$tmux_bin" "$out.steps.json")" \
    --steps "$out.steps.json" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  [ "${KEEP:-}" = 1 ] || rm -rf "$home_tmp"
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL codex $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("codex $name: FAIL ($dt)"); return 0
  fi
  say "codex $name ($dt, host-e2e exit $rc):"
  if [ "$rc" = 0 ] && python3 "$here/scenarios/sandbox_codex.py" check "$variant" "$out"; then
    passed=$((passed + 1)); report+=("codex $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; say "FAIL codex $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("codex $name: FAIL ($dt)")
  fi
}

# sandbox-agent (Codex): the agent-driven QA cycle (run_agent's machinery: agent_steps.py long with 2
# cycles, check_agent.py long) with Codex's workspace-write sandbox and the helpers' prefix rules as
# kijito-setup writes them: every helper the agent runs (pointer-digest, the verifiers'
# pointer-snapshot, qa-gate record, kijito-compact request) reaches kijito-local on loopback from
# outside the sandbox; each compaction is re-entered ATTESTED, the ceiling one UNATTESTED.
run_agent_sandbox() {
  local name=sandbox-agent root="$prefix/codex" out="$work/out/codex-sandbox-agent"
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP codex $name: tmux not installed"; skipped=$((skipped + 1)); report+=("codex $name: skipped (no tmux)"); return 0; }
  local miss; miss=$(missing "$root" $hook_bins $pass_bins kijito-compact kijito-setup)
  if [ -n "$miss" ]; then
    say "FAIL codex $name: not installed: $miss"; failures=$((failures + 1)); report+=("codex $name: FAIL (missing $miss)"); return 0
  fi
  mkdir -p "$work/out"
  python3 "$here/scenarios/agent_steps.py" long "$root" "$out.steps.json" 2
  local t0 rc=0 dt home_tmp setup
  home_tmp=$(mktemp -d /var/tmp/kijito-sbx.XXXXXX)
  setup="$(printf '%q' "$root/bin/kijito-setup") --root $(printf '%q' "$prefix") --host codex --write"
  t0=$(now)
  TMPDIR="$home_tmp" "$he2e" tui-codex --hooks "$root/hooks/hooks.json" --sandbox-mode none --host-arg=--no-daemon \
    --host-arg=-c --host-arg=model_auto_compact_token_limit=200000 --pane-host --out "$out" --timeout 600 --turn-timeout 150 \
    --before-start "$(printf '%q %q publish-only' "$seed" "$root") && $setup --sandbox && $setup --allow-helpers" \
    --steps "$out.steps.json" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  [ "${KEEP:-}" = 1 ] || rm -rf "$home_tmp"
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL codex $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("codex $name: FAIL ($dt)"); return 0
  fi
  say "codex $name ($dt):"
  if python3 "$here/scenarios/sandbox_codex.py" mode "$out" && python3 "$here/scenarios/check_agent.py" long "$out" "$root"; then
    passed=$((passed + 1)); report+=("codex $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; say "FAIL codex $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("codex $name: FAIL ($dt)")
  fi
}

# sandbox-consent (Codex): policy-consent's flow (scenarios/policy-seed.sh, policy_user.py,
# check_policy.py consent) with the workspace-write sandbox and the prefix rules from kijito-setup:
# the agent's `rm -r build` is denied, `memory-latch consent request` runs outside the sandbox, the
# user types the token, the identical retry runs once (inside the sandbox: the project is writable),
# a repeat is denied.
run_consent_sandbox() {
  local name=sandbox-consent host=codex root="$prefix/codex" out="$work/out/codex-sandbox-consent"
  wanted "$name" || return 0
  local miss; miss=$(missing "$root" $hook_bins pretool-hook prompt-hook memory-latch kijito-setup)
  if [ -n "$miss" ]; then
    say "FAIL codex $name: not installed: $miss"; failures=$((failures + 1)); report+=("codex $name: FAIL (missing $miss)"); return 0
  fi
  local pdir="$work/sandbox-consent" t0 rc=0 dt home_tmp setup ml
  mkdir -p "$pdir" "$work/out"
  home_tmp=$(mktemp -d /var/tmp/kijito-sbx.XXXXXX)
  setup="$(printf '%q' "$root/bin/kijito-setup") --root $(printf '%q' "$prefix") --host codex --write"
  ml=$(printf '%q' "$root/bin/memory-latch")
  t0=$(now)
  TMPDIR="$home_tmp" "$he2e" codex --hooks "$root/hooks/hooks.json" --sandbox-mode none --scenario prompts \
    --prompt-file "$pdir/prompt-1" --prompt-file "$pdir/prompt-2" --out "$out" --timeout 300 \
    --before-first "$setup --sandbox > \"\$HOST_E2E_OUT/setup-sandbox.txt\" && $setup --allow-helpers > /dev/null && $(printf '%q %q %q consent %q' "$here/scenarios/policy-seed.sh" "$root" "$pdir" 'rm -r build')" \
    --before-each "$(printf '%q %q' "$here/scenarios/policy_user.py" "$pdir/prompt-2")" \
    --after "cp \"\$CODEX_HOME/config.toml\" \"\$HOST_E2E_OUT/config-used.toml\"; { [ -d build ] && echo present || echo absent; } > \"\$HOST_E2E_OUT/build-after.txt\"; cat .memory-latch/_manifest.md > \"\$HOST_E2E_OUT/latch-log.txt\"; $ml verify > \"\$HOST_E2E_OUT/latch-verify.txt\" 2>&1" \
    > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  [ "${KEEP:-}" = 1 ] || rm -rf "$home_tmp"
  say "codex $name ($dt, host-e2e exit $rc):"
  if [ -f "$out/summary.json" ] && python3 "$here/scenarios/sandbox_codex.py" mode "$out" \
     && python3 "$here/scenarios/check_policy.py" consent "$out" "$root" "$host" "$pdir"; then
    passed=$((passed + 1)); report+=("codex $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; say "FAIL codex $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("codex $name: FAIL ($dt)")
  fi
}

for h in $hosts; do
  run_boots "$h"
  run_agent "$h" agent-long
  run_agent "$h" agent-typing
  for s in attested-manual unattested-manual attested-auto guard-deny guard-allow context policy-consent policy-mcp; do
    run_one "$h" "$s"
  done
  run_tui "$h" tmux-compact
  run_tui "$h" tmux-compact-nopass
  run_tui "$h" tmux-long
  if [ "$h" = codex ]; then run_tui "$h" tmux-compact-daemon; fi
  if [ "$h" = codex ]; then run_one codex adapter-compact; run_one codex adapter-long; fi
  run_one "$h" plain-request
  if [ "$h" = claude ]; then run_host_consent; run_sandbox_tui; fi
  if [ "$h" = codex ]; then run_sandbox_codex sandbox-codex; run_sandbox_codex sandbox-codex-hooks; run_agent_sandbox; run_consent_sandbox; fi
  if [ "$h" = claude ]; then run_one claude plugin-options; run_one claude consent; run_one claude summary-carried; run_one claude summary-dropped; run_one claude sandbox; fi
done

# The OS sandbox on Claude Code: the real TUI in tmux with kijito-qa's hooks (--plugin-dir) AND the OS
# sandbox as `kijito-setup --sandbox --host claude --write` sets it (scenarios/sandbox-claude-seed.sh),
# offline, the fake model issuing the calls (scenarios/sandbox_steps.py; docs/protocol.md §12):
#   sandbox-cycle:        the whole QA cycle (two verifier boots, qa-gate record, kijito-compact
#                         request, the adapter's compaction) re-entered ATTESTED: the helpers run
#                         outside the sandbox (sandbox.excludedCommands) and reach kijito-local;
#   sandbox-consent:      `rm -rf build` denied, consent requested, the user types the token, the
#                         retry runs, the repeat is denied (check_policy.py consent);
#   sandbox-self-consent: the agent runs the installed prompt-hook itself with the real token
#                         (`find ... -exec prompt-hook ... <<< '{...}'`): nothing confirmed, the
#                         retried `rm -rf build` stays denied.
# Each first proves the sandbox is on in that session (the agent's `touch ~/sandbox-probe` fails).
# --permission-mode=acceptEdits: see tests/hosts/README.md (The host's default permission mode).
run_sandbox_claude() {
  local name="$1" root="$prefix/claude" out="$work/out/claude-$1" mode="${1#sandbox-}"
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP claude $name: tmux not installed"; skipped=$((skipped + 1)); report+=("claude $name: skipped (no tmux)"); return 0; }
  local miss; miss=$(missing "$root" $hook_bins $pass_bins pretool-hook prompt-hook memory-latch kijito-compact kijito-setup)
  if [ -n "$miss" ]; then
    say "FAIL claude $name: not installed: $miss"; failures=$((failures + 1)); report+=("claude $name: FAIL (missing $miss)"); return 0
  fi
  local pdir="$work/claude-$name" t0 rc=0 dt seedmode=consent
  [ "$mode" = cycle ] && seedmode=cycle
  mkdir -p "$work/out" "$pdir"
  python3 "$here/scenarios/sandbox_steps.py" "$mode" "$root" "$pdir" "$out.steps.json"
  t0=$(now)
  "$he2e" tui-claude --plugin-dir "$root" --host-arg=--permission-mode=acceptEdits --host-arg=--allowedTools=Bash \
    --pane-host --out "$out" --timeout 900 --turn-timeout 300 \
    --before-start "$(printf '%q %q %q %q %q' "$here/scenarios/sandbox-claude-seed.sh" "$root" "$prefix" "$seedmode" "$pdir")" \
    --steps "$out.steps.json" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL claude $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("claude $name: FAIL ($dt)"); return 0
  fi
  say "claude $name ($dt):"
  if python3 "$here/scenarios/check_sandbox_claude.py" "$mode" "$out" "$root" "$pdir"; then
    passed=$((passed + 1)); report+=("claude $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; [ -f "$out/then.log" ] && { echo "--- then.log"; tail -n 30 "$out/then.log"; }
    say "FAIL claude $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("claude $name: FAIL ($dt)")
  fi
}
case " $hosts " in *" claude "*) for s in sandbox-cycle sandbox-consent sandbox-self-consent; do run_sandbox_claude "$s"; done ;; esac

# The real Codex TUI in a tmux pane, attached through `kijito-compact codex` (needs tmux).
run_adapter_tui() {
  local name=adapter-tui root="$prefix/codex" out="$work/out/codex-adapter-tui"
  wanted "$name" || return 0
  local miss
  miss=$(missing "$root" $hook_bins $pass_bins kijito-compact)
  if [ -n "$miss" ]; then
    say "SKIP codex $name: missing $miss"; skipped=$((skipped + 1)); report+=("codex $name: skipped"); return 0
  fi
  if ! command -v tmux >/dev/null 2>&1; then
    say "SKIP codex $name: tmux not found"; skipped=$((skipped + 1)); report+=("codex $name: skipped (no tmux)"); return 0
  fi
  mkdir -p "$work/out"
  local t0 rc=0 dt data='${XDG_STATE_HOME}/kijito-qa-data'
  t0=$(now)
  "$he2e" tui-codex --hooks "$root/hooks/hooks.json" --out "$out" --timeout 300 \
    --host-wrapper "exec $root/bin/kijito-compact codex --codex \"\$HOST_E2E_CODEX\" --data-dir \"\$XDG_STATE_HOME/kijito-qa-data\" --message-log \"\$HOST_E2E_OUT/adapter-messages.jsonl\" -- \"\$@\"" \
    --host-arg=--sandbox --host-arg=danger-full-access \
    --prompt "Say hello" --then "$(printf '%q %q' "$here/scenarios/seed-request.sh" "$root")" \
    --then-prompt "Run this. HOST-E2E-RUN-TOOL: $here/scenarios/record-request.sh \$HOST_E2E_OUT {session_id} \$HOST_E2E_TRANSCRIPT_PATH" \
    --wait-compact 90 --after-prompt "Second prompt after compaction" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL codex $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("codex $name: FAIL ($dt)"); return 0
  fi
  say "codex $name ($dt):"
  if python3 "$check" adapter-tui "$out" "$root"; then
    passed=$((passed + 1)); report+=("codex $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; say "FAIL codex $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1))
    report+=("codex $name: FAIL ($dt)")
  fi
}
case " $hosts " in *" codex "*) run_adapter_tui ;; esac

# kijito-setup --mcp registers kijito-local's MCP server, the real host lists its tools and
# the fake model curates through them.
# mcp-cycle: the same registration, then the whole cycle through the MCP tools:
# recall, create two, correct one, fade one, publish, two witnessed verifier boots, record,
# compaction, ATTESTED re-entry (scenarios/mcp-cycle.sh, check_mcp_cycle.py).
run_mcp_tools() {
  local host="$1" name="${2:-mcp-tools}" out="$work/out/$1-${2:-mcp-tools}"
  wanted "$name" || return 0
  local miss
  miss=$(missing "$prefix/$host" kijito-local kijito-setup kijito-doctor $([ "$name" = mcp-cycle ] && echo "$hook_bins $pass_bins pretool-hook"))
  if [ -n "$miss" ]; then
    say "SKIP $host $name: missing $miss"; skipped=$((skipped + 1)); report+=("$host $name: skipped"); return 0
  fi
  mkdir -p "$work/out"
  local t0 dt
  t0=$(now)
  if "$here/scenarios/$name.sh" "$he2e" "$prefix" "$host" "$out" > "$out.log" 2>&1; then
    dt=$(took "$t0"); say "$host $name ($dt):"; grep '^  ' "$out.log" || true
    passed=$((passed + 1)); report+=("$host $name: ok ($dt)")
  else
    dt=$(took "$t0"); tail -n 30 "$out.log"; say "FAIL $host $name ($dt)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)")
  fi
}
for h in $hosts; do run_mcp_tools "$h"; run_mcp_tools "$h" mcp-cycle; done

# kijito-qa: the host killed mid-cycle and restarted. The real TUI as the pane's
# own command (--pane-host), driven by its own agent (lib/he2e/qa_driver.py) like run_agent; the
# probe hook SIGKILLs the host from inside the host's own hook at the point (race-free: the host
# waits for that hook; lib/he2e/tui.py arm_kill), the pane's command is restarted the way people
# resume (`claude --continue`, `codex resume --last`), then the next cycle runs.
#   crash-record:      after `qa-gate record` (at the PreToolUse of `kijito-compact request`)
#   crash-precompact:  in PreCompact, after it recorded its attempt, before the compaction
#   crash-postcompact: in PostCompact (Codex: claimed, before SessionStart(compact) delivers;
#                      Claude Code: after its SessionStart(compact) delivered)
# Steps: scenarios/crash_steps.py; checks (on the model's requests and the qa/ files):
# scenarios/check_crash.py.
run_crash() {
  local host="$1" name="$2" root="$prefix/$1" out="$work/out/$1-$2" args=() point
  wanted "$name" || return 0
  command -v tmux >/dev/null 2>&1 || { say "SKIP $host $name: tmux not installed"; skipped=$((skipped + 1)); report+=("$host $name: skipped (no tmux)"); return 0; }
  local miss
  miss=$(missing "$root" $hook_bins $pass_bins kijito-compact)
  if [ -n "$miss" ]; then
    say "FAIL $host $name: not installed: $miss"; failures=$((failures + 1)); report+=("$host $name: FAIL (missing $miss)"); return 0
  fi
  point=${name#crash-}
  mkdir -p "$work/out"
  python3 "$here/scenarios/crash_steps.py" "$point" "$root" "$host" "$out.steps.json"
  case "$host" in
    claude) args=(tui-claude --plugin-dir "$root" --host-arg=--permission-mode=acceptEdits --host-arg=--allowedTools=Bash) ;;
    codex) args=(tui-codex --hooks "$root/hooks/hooks.json" --host-arg=--sandbox=danger-full-access --host-arg=--no-daemon) ;;
  esac
  local t0 rc=0 dt
  t0=$(now)
  "$he2e" "${args[@]}" --pane-host --out "$out" --timeout 600 --turn-timeout 150 \
    --before-start "$(printf '%q %q publish-only' "$seed" "$root")" --steps "$out.steps.json" > "$out.log" 2>&1 || rc=$?
  dt=$(took "$t0")
  if [ ! -f "$out/summary.json" ]; then
    cat "$out.log"; say "FAIL $host $name: host-e2e exited $rc ($dt)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)"); return 0
  fi
  say "$host $name ($dt):"
  if python3 "$here/scenarios/check_crash.py" "$point" "$out" "$root"; then
    passed=$((passed + 1)); report+=("$host $name: ok ($dt)")
  else
    tail -n 20 "$out.log"; [ -f "$out/then.log" ] && { echo "--- then.log"; tail -n 30 "$out/then.log"; }
    say "FAIL $host $name (results in $out; KEEP=1 keeps them)"; failures=$((failures + 1)); report+=("$host $name: FAIL ($dt)")
  fi
}
for h in $hosts; do for p in record precompact postcompact; do run_crash "$h" "crash-$p"; done; done

say "summary: $passed passed, $failures failed, $skipped skipped"
for r in "${report[@]}"; do say "  $r"; done
[ "$failures" -eq 0 ]
