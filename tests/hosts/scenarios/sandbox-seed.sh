#!/bin/sh
# sandbox-seed.sh ROOT PREFIX DIR: run by host-e2e --before-first in the project dir (the host's
# cwd), before Claude Code starts: `kijito-setup --sandbox --write` and `--allow-helpers --write`
# into the run's CLAUDE_CONFIG_DIR (no kijito-qa hook is installed in this scenario, so only the OS
# sandbox stands between the agent's commands and kijito-qa's files), then one prompt file per step
# (DIR/prompt-N: `HOST-E2E-RUN-TOOL: <line>`, one Bash call each): two helpers that must work
# (outside the sandbox, by sandbox.excludedCommands), then the agent's attempts that must fail.
set -eu
root="$1" prefix="$2" dir="$3"
: "${CLAUDE_CONFIG_DIR:?}" "${XDG_CONFIG_HOME:?}" "${XDG_STATE_HOME:?}"
"$root/bin/kijito-setup" --sandbox --host claude --root "$prefix" --write > "$dir/setup-sandbox.txt"
"$root/bin/kijito-setup" --allow-helpers --host claude --root "$prefix" --write > "$dir/setup-allow.txt"
mkdir -p -m 0700 "$XDG_CONFIG_HOME/kijito-qa"
p="$PWD" b="$root/bin" n=0
step() { n=$((n + 1)); printf 'HOST-E2E-RUN-TOOL: %s\n' "$1" > "$dir/prompt-$n"; }
step "$b/memory-latch init --objective sandbox --next-step probe --workspace $p"
step "$b/memory-latch checkpoint --next-step attempts --workspace $p"
step "python3 -c \"import os; d = os.path.expanduser('~/.claude/projects/-x'); os.makedirs(d, exist_ok=True); open(d + '/forged.jsonl', 'w').write('{}')\""
step "printf '%s' '{\"session_id\":\"forged\",\"transcript_path\":\"/nonexistent\",\"cwd\":\"$p\",\"hook_event_name\":\"UserPromptSubmit\",\"prompt\":\"ACT-23456A\"}' | find $b -name prompt-hook -exec {} --host claude --expect UserPromptSubmit \\;"
step "cd $XDG_CONFIG_HOME/kijito-qa && echo '{}' > policy.json"
step "mv .memory-latch moved-latch"
step "python3 -c \"import os; os.rename('.memory-latch', 'moved-latch')\""
step "touch $XDG_STATE_HOME/kijito-qa/latch-heads/forged"
step "python3 -c \"import os; open(os.path.expanduser('~/.bashrc'), 'a').write('x')\""
step "$b/memory-latch status --workspace $p"
echo "$n" > "$dir/steps"
