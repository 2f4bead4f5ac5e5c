#!/bin/sh
# kijito-qa: what the compaction adapter's worker does to the pane, for the TUI self-test:
# the literal text /compact, then Enter as a separate call, nothing else. `tmux` is the
# harness's logging shim (first on PATH); TMUX/TMUX_PANE are the values the hooks saw.
set -e
tmux send-keys -t "$TMUX_PANE" -l /compact
tmux send-keys -t "$TMUX_PANE" Enter
