#!/usr/bin/env bash
# install.sh: build kijito-qa's release binaries and lay out one self-contained
# plugin root per host (Codex, Claude Code). See docs/configuration.md (Install).
set -euo pipefail
umask 022

usage() {
  cat <<'EOF'
Usage: install.sh [--prefix DIR] [--host codex|claude|both] [--bin-dir DIR] [--debug] [--uninstall] [--help]

Builds the release binaries (cargo build --release --locked; the hook binaries
with the size-optimised `hooks` profile: cargo build --profile hooks -p
kijito-hooks, linked static-pie on x86_64 Linux) and installs one plugin root
per host:
  <prefix>/codex/   bin/, hooks/hooks.json, skills/, .codex-plugin/plugin.json
  <prefix>/claude/  bin/, hooks/hooks.json, skills/, .claude-plugin/plugin.json
Hook commands carry the absolute installed paths, written at install time.
Re-running upgrades in place. --uninstall removes exactly the files listed in
each root's .kijito-install-manifest, and the directories it created when they
are empty; first it takes kijito-qa's MCP server out of the files
`kijito-setup --mcp --write` wrote (.mcp.json, Codex's config.toml block),
keeping everything else in them.

  --prefix DIR   install prefix (default: ~/.local/share/kijito-qa). Only
                 letters, digits and . _ - + / are accepted (hosts run hook
                 commands through a shell).
  --host H       codex, claude or both (default: both)
  --bin-dir DIR  also link every installed binary into DIR (e.g. ~/.local/bin,
                 a directory already on your PATH); never replaces a file
                 there that is not such a link. Without it, install.sh prints
                 the one line that puts <root>/bin on PATH.
  --debug        install the debug build (cargo build --locked, no --release):
                 for the test suite, which has built it already
  --uninstall    remove what a previous install put there, the MCP
                 registrations and the helper allow rules of that root
                 (Codex's kijito-qa.rules, Claude Code's Bash(<root>/bin/...)
                 rules); list what stays yours (config, token, QA state,
                 latch state, workspace latches)
  --help         this text
EOF
}

die() { printf 'install.sh: error: %s\n' "$*" >&2; exit 1; }
say() { printf 'install.sh: %s\n' "$*"; }

prefix="" host="both" uninstall=0 bindir= profile=release
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) [ $# -ge 2 ] || { usage >&2; die "--prefix needs a directory"; }; prefix="$2"; shift 2 ;;
    --prefix=*) prefix="${1#--prefix=}"; shift ;;
    --host) [ $# -ge 2 ] || { usage >&2; die "--host needs codex, claude or both"; }; host="$2"; shift 2 ;;
    --host=*) host="${1#--host=}"; shift ;;
    --bin-dir) [ $# -ge 2 ] || { usage >&2; die "--bin-dir needs a directory"; }; bindir="$2"; shift 2 ;;
    --bin-dir=*) die "write --bin-dir DIR (two words), not --bin-dir=DIR" ;;
    --uninstall) uninstall=1; shift ;;
    --debug) profile=debug; shift ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done

case "$host" in
  codex) hosts=(codex) ;;
  claude) hosts=(claude) ;;
  both) hosts=(codex claude) ;;
  *) die "--host must be codex, claude or both (got '$host')" ;;
esac

command -v python3 >/dev/null 2>&1 || die "python3 is required (it reads cargo metadata and renders the JSON files)"

if [ -z "$prefix" ]; then
  [ -n "${HOME:-}" ] || die "HOME is not set; give --prefix"
  prefix="$HOME/.local/share/kijito-qa"
fi
# Absolute, normalised (no symlink resolution), and safe to paste into a shell
# command line unquoted: hosts run hook commands through a shell.
prefix=$(python3 - "$prefix" <<'PY'
import os, re, sys
p = sys.argv[1]
if not p:
    sys.exit("empty prefix")
p = os.path.normpath(os.path.join(os.getcwd(), p))
print(p)
PY
) || die "bad --prefix"
if ! [[ "$prefix" =~ ^/[A-Za-z0-9._/+-]*$ ]]; then
  die "prefix '$prefix' contains a character that would need shell quoting (space or one of \$\`\"'\\;&|<>()*?[]{}~!#=%,:@ or a control character); hosts run hook commands through a shell, so choose a prefix made of letters, digits and . _ - + /"
fi
[ "$prefix" != "/" ] || die "refusing to install into /"

if [ -n "$bindir" ]; then
  bindir=$(python3 -c 'import os,sys; print(os.path.normpath(os.path.join(os.getcwd(), os.path.expanduser(sys.argv[1]))))' "$bindir") || die "bad --bin-dir"
fi

# unlink_bins: remove the links in --bin-dir that point into this prefix.
unlink_bins() {
  [ -n "$bindir" ] && [ -d "$bindir" ] || return 0
  local l n=0
  for l in "$bindir"/*; do
    if [ -L "$l" ] && [[ "$(readlink "$l")" == "$prefix"/* ]]; then rm -f "$l"; n=$((n + 1)); fi
  done
  say "removed $n link(s) from $bindir"
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MANIFEST_NAME=".kijito-install-manifest"
MCP_REGISTRATIONS=".kijito-mcp-registrations"

# ----------------------------------------------------------------- uninstall

# Remove exactly the paths listed in <root>/$MANIFEST_NAME ("f <relpath>" for
# files, "d <relpath>" for directories the install created), then the manifest,
# then the root and the prefix if they are left empty.
uninstall_root() {
  local root="$1" m="$1/$MANIFEST_NAME"
  if [ ! -f "$m" ] || [ -L "$m" ]; then
    say "nothing installed in $root (no $MANIFEST_NAME); left untouched"
    return 0
  fi
  # What `kijito-setup --mcp --write` registered (the root's .mcp.json, the
  # [mcp_servers.kijito] block in Codex's config.toml, listed in
  # $MCP_REGISTRATIONS): kijito-setup takes its server out of those files,
  # keeping everything the user wrote, before its binary goes.
  if [ -e "$root/$MCP_REGISTRATIONS" ]; then
    [ -x "$root/bin/kijito-setup" ] || die "$root/$MCP_REGISTRATIONS lists MCP registrations but $root/bin/kijito-setup is gone; nothing was removed"
    "$root/bin/kijito-setup" --mcp-uninstall --root "$root" \
      || die "could not remove the MCP registrations listed in $root/$MCP_REGISTRATIONS (see above); nothing else was removed"
  fi
  python3 - "$root" "$m" <<'PY'
import os, sys
root, manifest = sys.argv[1], sys.argv[2]
files, dirs = [], []
for line in open(manifest, encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or line.startswith("#"):
        continue
    kind, _, rel = line.partition(" ")
    norm = os.path.normpath(rel)
    if os.path.isabs(rel) or norm.startswith("..") or norm in (".", ""):
        sys.exit("install.sh: error: %s lists a path outside the root: %r" % (manifest, rel))
    (files if kind == "f" else dirs if kind == "d" else []).append(norm)
removed = 0
for rel in files:
    p = os.path.join(root, rel)
    if os.path.islink(p) or os.path.isfile(p):
        os.unlink(p)
        removed += 1
for rel in sorted(dirs, key=lambda r: r.count(os.sep), reverse=True):
    p = os.path.join(root, rel)
    try:
        os.rmdir(p)
    except OSError:
        pass  # not empty (someone else's files) or already gone
os.unlink(manifest)
print("install.sh: removed %d installed file(s) from %s" % (removed, root))
PY
  if rmdir "$root" 2>/dev/null; then say "removed empty $root"; else
    [ -d "$root" ] && say "kept $root (it holds files this script did not install)"; fi
}

# What `kijito-setup --allow-helpers --write` wrote for ROOT of HOST (the
# allow rules name ROOT/bin/, so they would let whatever later sits there run
# unprompted): Codex, kijito-qa's own rules file when it is this root's;
# Claude Code, the `Bash(ROOT/bin/...)` entries of permissions.allow in the
# user settings, every other key and entry kept (written atomically, same mode).
uninstall_allow_rules() {
  local h="$1" root="$2"
  python3 - "$h" "$root/bin/" "${CODEX_HOME:-$HOME/.codex}/rules/kijito-qa.rules" "${CLAUDE_CONFIG_DIR:-$HOME/.claude}/settings.json" <<'PY'
import json, os, sys
host, bindir, codex_rules, settings = sys.argv[1:]
def say(m): print("install.sh: " + m)
if host == "codex":
    if os.path.isfile(codex_rules) and not os.path.islink(codex_rules):
        first = open(codex_rules, encoding="utf-8", errors="replace").readline()
        if first.startswith("# kijito-qa: the helper commands of %s that" % bindir.rstrip("/")):
            os.unlink(codex_rules)
            say("removed %s (the Codex allow rules for %s)" % (codex_rules, bindir))
        else:
            say("kept %s: it is not the rules file of %s" % (codex_rules, bindir))
    sys.exit(0)
if not os.path.isfile(settings) or os.path.islink(settings) or os.path.getsize(settings) > 1024 * 1024:
    sys.exit(0)
try:
    data = json.load(open(settings, encoding="utf-8"))
except ValueError as e:
    say("kept %s: not JSON (%s); remove its Bash(%s...) allow rules by hand" % (settings, e, bindir))
    sys.exit(0)
allow = data.get("permissions", {}).get("allow") if isinstance(data, dict) and isinstance(data.get("permissions"), dict) else None
if not isinstance(allow, list):
    sys.exit(0)
ours = [r for r in allow if isinstance(r, str) and r.startswith("Bash(" + bindir) and r.endswith(":*)")]
if not ours:
    sys.exit(0)
data["permissions"]["allow"] = [r for r in allow if r not in ours]
tmp = os.path.join(os.path.dirname(settings), ".%s.tmp.%d" % (os.path.basename(settings), os.getpid()))
fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, os.stat(settings).st_mode & 0o777)
with os.fdopen(fd, "w", encoding="utf-8") as f:
    f.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    f.flush()
    os.fsync(f.fileno())
os.replace(tmp, settings)
dfd = os.open(os.path.dirname(settings), os.O_RDONLY)
os.fsync(dfd)
os.close(dfd)
say("removed %d Claude Code allow rule(s) for %s from %s" % (len(ours), bindir, settings))
PY
}

# What kijito-qa's binaries wrote outside the prefix that is yours to keep
# or delete: listed, never removed (docs/configuration.md, Install).
list_kept() {
  python3 - "$HOME" <<'PY'
import json, os, sys
home = sys.argv[1]
env = lambda k, d: os.environ.get(k) or d
cfg_dir = os.path.join(env("XDG_CONFIG_HOME", os.path.join(home, ".config")), "kijito-qa")
data_dir = os.path.join(home, ".cache", "kijito-qa")
try:
    data_dir = os.path.expanduser(json.load(open(os.path.join(cfg_dir, "config.json"))).get("dataDir") or data_dir)
except (OSError, ValueError, AttributeError):
    pass
state = os.path.join(env("XDG_STATE_HOME", os.path.join(home, ".local", "state")), "kijito-qa")
claude_data = os.path.join(env("CLAUDE_CONFIG_DIR", os.path.join(home, ".claude")), "plugins", "data")
items = [
    (cfg_dir, "your config and token file (the token is your secret)"),
    (data_dir, "the hooks' QA state and its audit trail (consumed tickets)"),
    (state, "latch head records, the latch workspace index and the QA spent-nonce ledgers; deleting them lets a rolled-back latch pass"),
]
if os.path.isdir(claude_data):
    items += [(os.path.join(claude_data, d), "the Claude Code hooks' data dir") for d in sorted(os.listdir(claude_data)) if d.startswith("kijito-qa")]
kept = [(p, why) for p, why in items if os.path.lexists(p)]
print("install.sh: kept (yours: remove by hand with rm -r when you no longer want them):")
for p, why in kept:
    print("install.sh:   %s: %s" % (p, why))
print("install.sh:   every workspace's .memory-latch/ (your memory-latch history; %s names them)" % os.path.join(state, "latch-heads"))
PY
}

if [ "$uninstall" = 1 ]; then
  [ -n "${HOME:-}" ] || die "HOME is not set"
  unlink_bins
  for h in "${hosts[@]}"; do
    # the rules go first: they name binaries this uninstall removes
    [ -f "$prefix/$h/$MANIFEST_NAME" ] && uninstall_allow_rules "$h" "$prefix/$h"
    uninstall_root "$prefix/$h"
  done
  if rmdir "$prefix" 2>/dev/null; then say "removed empty $prefix"; fi
  list_kept
  exit 0
fi

# ----------------------------------------------------------------- build

CARGO="${CARGO:-cargo}"
command -v "$CARGO" >/dev/null 2>&1 || die "cargo not found on PATH: install a Rust toolchain (https://rustup.rs) and re-run"

if [ -e "$prefix" ]; then
  [ -d "$prefix" ] || die "prefix $prefix exists and is not a directory"
  perms=$(stat -c '%a' "$prefix")
  if [ $(( 8#$perms & 8#022 )) -ne 0 ]; then
    die "prefix $prefix is group- or world-writable (mode $perms); hooks would run binaries others can replace"
  fi
fi

if [ "$profile" = release ]; then
  say "building release binaries (cargo build --release --locked)"
  (cd "$here" && "$CARGO" build --release --locked --workspace --exclude kijito-hooks --bins) || die "cargo build failed"
  # The hook binaries run on every tool call and prompt: the `hooks` profile
  # (Cargo.toml) builds them small; see docs/architecture.md (Binary sizes).
  # On x86_64 Linux they are linked static-pie (no dynamic loader at start:
  # faster to start, docs/testing.md); `--target` keeps RUSTFLAGS off the
  # build scripts and proc-macros. Elsewhere, or when the static link fails
  # (no static libc), the dynamic build. KIJITO_HOOKS_DYNAMIC=1 forces it.
  hooks_target=
  if [ "$(uname -s)/$(uname -m)" = Linux/x86_64 ] && [ -z "${KIJITO_HOOKS_DYNAMIC:-}" ]; then
    say "building the hook binaries static-pie (cargo build --profile hooks --locked -p kijito-hooks --target x86_64-unknown-linux-gnu, +crt-static)"
    if (cd "$here" && RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" "$CARGO" build --profile hooks --locked -p kijito-hooks --bins --target x86_64-unknown-linux-gnu); then
      hooks_target=x86_64-unknown-linux-gnu
    else
      say "WARNING: the static link failed (is libc6-dev's libc.a installed?); building the hook binaries dynamic"
    fi
  fi
  if [ -z "$hooks_target" ]; then
    say "building the hook binaries (cargo build --profile hooks --locked -p kijito-hooks)"
    (cd "$here" && "$CARGO" build --profile hooks --locked -p kijito-hooks --bins) || die "cargo build failed"
  fi
else
  say "building debug binaries (cargo build --locked)"
  (cd "$here" && "$CARGO" build --locked --workspace --bins) || die "cargo build failed"
fi

meta=$(cd "$here" && "$CARGO" metadata --no-deps --format-version 1 --locked) || die "cargo metadata failed"
read -r target_dir version < <(printf '%s' "$meta" | python3 -c '
import json, sys
m = json.load(sys.stdin)
root = [p for p in m["packages"] if p["name"] == "kijito-qa"]
print(m["target_directory"], root[0]["version"] if root else "0.0.0")
')
mapfile -t bins < <(printf '%s' "$meta" | python3 -c '
import json, sys
m = json.load(sys.stdin)
names = sorted({t["name"] for p in m["packages"] for t in p["targets"] if "bin" in t["kind"]})
print("\n".join(names))
')
mapfile -t hook_bins < <(printf '%s' "$meta" | python3 -c '
import json, sys
m = json.load(sys.stdin)
print("\n".join(sorted(t["name"] for p in m["packages"] if p["name"] == "kijito-hooks" for t in p["targets"] if "bin" in t["kind"])))
')
[ ${#bins[@]} -gt 0 ] || die "the workspace declares no [[bin]] targets"
# built B: where the binary B was built (the hooks profile for kijito-hooks' bins in a release install)
built() {
  local h
  if [ "$profile" = release ]; then
    for h in "${hook_bins[@]}"; do
      [ "$h" = "$1" ] && { printf '%s/%shooks/%s' "$target_dir" "${hooks_target:+$hooks_target/}" "$1"; return; }
    done
  fi
  printf '%s/%s/%s' "$target_dir" "$profile" "$1"
}
for b in "${bins[@]}"; do
  [ -x "$(built "$b")" ] || die "built binary missing: $(built "$b")"
done

# ----------------------------------------------------------------- install

# place SRC DEST MODE: atomically put a copy (or a hard link, same filesystem)
# of SRC at DEST: temp name in DEST's directory, then rename.
place_bin() {
  local src="$1" dest="$2" tmp
  # already the very file we would install (a hard link from an earlier run): nothing to do
  if [ -f "$dest" ] && [ ! -L "$dest" ] && [ "$src" -ef "$dest" ]; then return 0; fi
  tmp="$(dirname "$dest")/.$(basename "$dest").tmp.$$"
  rm -f "$tmp"
  if ! ln "$src" "$tmp" 2>/dev/null; then
    cp "$src" "$tmp"
    chmod 0755 "$tmp"
  fi
  mv -f "$tmp" "$dest"
}

# render TEMPLATE DEST ROOT HOST: keep the lines between `@BEGIN-<host>@` and
# `@END-<host>@` (each marker alone on its line) only for that host, substitute
# @ROOT@ @HOST@ @HOSTNAME@ @PREFIX@ @VERSION@, refuse an unreplaced @WORD@
# token, check JSON templates parse, write atomically (0644).
# (tests/it/skills.rs runs this same program.)
render() {
  python3 - "$1" "$2" "$3" "$4" "$prefix" "$version" <<'PY'
import json, os, re, sys
src, dest, root, host, prefix, version = sys.argv[1:]
names = {"codex": "Codex", "claude": "Claude Code"}
text = open(src, encoding="utf-8").read()
kept, inside = [], None
for line in text.split("\n"):
    m = re.fullmatch(r"@(BEGIN|END)-(codex|claude)@", line.strip())
    if m and m.group(1) == "BEGIN" and inside is None:
        inside = m.group(2)
    elif m and m.group(1) == "END" and inside == m.group(2):
        inside = None
    elif m:
        sys.exit("render: unbalanced %s in %s" % (line.strip(), src))
    elif inside is None or inside == host:
        kept.append(line)
if inside is not None:
    sys.exit("render: @BEGIN-%s@ without @END-%s@ in %s" % (inside, inside, src))
text = "\n".join(kept)
for k, v in (("@ROOT@", root), ("@HOST@", host), ("@HOSTNAME@", names[host]),
             ("@PREFIX@", prefix), ("@VERSION@", version)):
    text = text.replace(k, v)
left = re.findall(r"@[A-Z][A-Z0-9_-]*@", text)
if left:
    sys.exit("render: unreplaced %s in %s" % (", ".join(sorted(set(left))), src))
if dest.endswith(".json"):
    json.loads(text)  # a broken template must not be installed
tmp = os.path.join(os.path.dirname(dest), ".%s.tmp.%d" % (os.path.basename(dest), os.getpid()))
with open(tmp, "w", encoding="utf-8") as f:
    f.write(text)
    f.flush()
    os.fsync(f.fileno())
os.chmod(tmp, 0o644)
os.replace(tmp, dest)
PY
}

install_root() {
  local h="$1" root="$prefix/$1" mdir
  case "$h" in codex) mdir=".codex-plugin" ;; claude) mdir=".claude-plugin" ;; esac
  local -a files=() dirs=()
  local d
  for d in "" bin hooks skills "$mdir" $(cd "$here/skills" && ls -1); do
    case "$d" in "") rel="." ;; bin|hooks|skills|"$mdir") rel="$d" ;; *) rel="skills/$d" ;; esac
    if [ ! -d "$root/$rel" ]; then
      mkdir -p "$root/$rel"
      chmod 0755 "$root/$rel"
      [ "$rel" = "." ] || dirs+=("$rel")
    elif [ "$rel" != "." ]; then
      dirs+=("$rel")
    fi
  done
  # keep the directories an earlier install created listed, so uninstall finds them
  if [ -f "$root/$MANIFEST_NAME" ]; then
    while read -r kind rel; do
      [ "$kind" = d ] && dirs+=("$rel")
    done < "$root/$MANIFEST_NAME"
  fi

  local b
  for b in "${bins[@]}"; do
    place_bin "$(built "$b")" "$root/bin/$b"
    files+=("bin/$b")
  done
  render "$here/hooks/$h/hooks.json.tmpl" "$root/hooks/hooks.json" "$root" "$h"; files+=("hooks/hooks.json")
  render "$here/hooks/$h/plugin.json.tmpl" "$root/$mdir/plugin.json" "$root" "$h"; files+=("$mdir/plugin.json")
  render "$here/hooks/README.plugin.md.tmpl" "$root/README.md" "$root" "$h"; files+=("README.md")
  local s
  for s in $(cd "$here/skills" && ls -1); do
    render "$here/skills/$s/SKILL.md" "$root/skills/$s/SKILL.md" "$root" "$h"
    files+=("skills/$s/SKILL.md")
  done

  # Files a previous install listed that this one does not: remove them (upgrade).
  if [ -f "$root/$MANIFEST_NAME" ]; then
    local kind rel f keep
    while read -r kind rel; do
      [ "$kind" = f ] || continue
      keep=0
      for f in "${files[@]}"; do [ "$f" = "$rel" ] && keep=1 && break; done
      if [ "$keep" = 0 ] && { [ -f "$root/$rel" ] || [ -L "$root/$rel" ]; }; then
        rm -f "$root/$rel"
        say "removed stale $root/$rel"
      fi
    done < "$root/$MANIFEST_NAME"
  fi

  local tmp="$root/.$MANIFEST_NAME.tmp.$$"
  {
    printf '# kijito-qa %s install manifest: paths relative to this root (f file, d directory)\n' "$version"
    printf 'f %s\n' "${files[@]}"
    printf 'd %s\n' $(printf '%s\n' "${dirs[@]}" | sort -u)
  } > "$tmp"
  chmod 0644 "$tmp"
  mv -f "$tmp" "$root/$MANIFEST_NAME"

  say "installed $h plugin root: $root"
  say "  bin/ (${#bins[@]}): ${bins[*]}"
  say "  hooks: $root/hooks/hooks.json"
  say "  manifest: $root/$mdir/plugin.json; skills: $(cd "$here/skills" && ls -1 | tr '\n' ' ')"
  local missing=()
  for b in precompact postcompact session-hook prompt-hook pretool-hook; do
    [ -x "$root/bin/$b" ] || missing+=("$b")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "  WARNING: hooks.json calls ${missing[*]}, which this workspace does not build yet; those hooks will fail until it does"
  fi
}

mkdir -p "$prefix"
for h in "${hosts[@]}"; do install_root "$h"; done
case "$host" in
  both|claude) say "Claude Code: claude --plugin-dir $prefix/claude (or add it to a marketplace)"
    say "Claude Code status line (context ratio and QA pass; docs/context.md): in ~/.claude/settings.json set"
    say "  \"statusLine\": {\"type\": \"command\", \"command\": \"$prefix/claude/bin/kijito-context --statusline --data-dir <the plugin data dir>\"}" ;;
esac
case "$host" in
  both|codex) say "Codex: use $prefix/codex/hooks/hooks.json as \$CODEX_HOME/hooks.json (trust the hooks), or install $prefix/codex as a plugin" ;;
esac

# The binaries on PATH: links in --bin-dir, or the one line to paste.
first="$prefix/${hosts[0]}/bin"
if [ -n "$bindir" ]; then
  mkdir -p "$bindir"
  linked=0
  for b in "${bins[@]}"; do
    l="$bindir/$b"
    if [ -e "$l" ] && ! [ -L "$l" ]; then
      say "  WARNING: $l exists and is not a link; left untouched"
      continue
    fi
    if [ -L "$l" ] && ! [[ "$(readlink "$l")" == "$prefix"/* ]]; then
      say "  WARNING: $l links to $(readlink "$l"), not into $prefix; left untouched"
      continue
    fi
    ln -sfn "$first/$b" "$l"
    linked=$((linked + 1))
  done
  say "linked $linked binaries into $bindir (-> $first)"
  case ":$PATH:" in *":$bindir:"*) ;; *) say "$bindir is not on your PATH; add it: export PATH=\"$bindir:\$PATH\"" ;; esac
else
  say "put the binaries on PATH (add this line to your shell profile):"
  printf 'export PATH="%s:$PATH"\n' "$first"
fi
for h in "${hosts[@]}"; do
  say "an unattended $h session runs the helper commands without stopping for approval once you allow them (README, Permissions): $prefix/$h/bin/kijito-setup --allow-helpers --host $h --root $prefix/$h (shows the rules; add --write)"
  say "the hard boundary is the $h sandbox, which keeps the agent's commands off kijito-qa's state, config, this prefix and the latch (README, What an agent can still do): $prefix/$h/bin/kijito-setup --sandbox --host $h --root $prefix (shows the change; add --write)"
done
case "$host" in
  both|codex) say "Codex: start it as \`codex --no-daemon\` inside tmux, or through the compaction adapter: $prefix/codex/bin/kijito-setup --codex-alias --root $prefix/codex prints the alias" ;;
esac
# The doctor checks only the host(s) installed here (--host both would be red on a missing root).
say "then check what this installed: $first/kijito-doctor --host $host --root $prefix"
