#!/usr/bin/env bash
# Installs the real MCP servers the tests run (tests/cli, tests/lsp): idempotent, version-pinned, every
# download retried, caches outside the clone (TOTEM_TEST_CACHE, default ~/.cache/totem-test), so
# a second run takes a fraction of a second. The tests call it once per session (tests/support/real_mcp.py).
#
#   scripts/setup-mcp-servers.sh        # every server
#   scripts/setup-mcp-servers.sh time   # one server (filesystem, time, git)
#
# Each server has a `setup_<name>` function below; add yours beside the others. What the tests
# read is one line per server in $CACHE/mcp.env: NAME=the command line that starts it.
set -euo pipefail

CACHE="${TOTEM_TEST_CACHE:-$HOME/.cache/totem-test}"
mkdir -p "$CACHE"
PYTHON="${PYTHON:-python3}"

# log, retry
source "$(dirname "${BASH_SOURCE[0]}")/retry.sh"

# record NAME COMMAND: the command line that starts server NAME, for the tests.
record() {
  local env="$CACHE/mcp.env"
  touch "$env"
  grep -v "^$1=" "$env" >"$env.tmp" || true
  printf '%s=%s\n' "$1" "$2" >>"$env.tmp"
  mv "$env.tmp" "$env"
}

# --- filesystem: @modelcontextprotocol/server-filesystem from npm (its 2026.x runs on Node 20) ----

FILESYSTEM_VERSION=2026.8.31

setup_filesystem() {
  command -v node >/dev/null && command -v npm >/dev/null || { log "filesystem: needs node and npm (Node 20+)"; return 1; }
  local dir="$CACHE/mcp-filesystem-$FILESYSTEM_VERSION"
  if [ ! -f "$dir/.installed" ]; then
    rm -rf "$dir"
    mkdir -p "$dir"
    log "npm install @modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION (into $dir)"
    (cd "$dir" && echo '{"private": true}' >package.json &&
      retry npm install --no-save --no-audit --no-fund --loglevel=error \
        "@modelcontextprotocol/server-filesystem@$FILESYSTEM_VERSION" >"$dir/install.log" 2>&1) || {
      tail -30 "$dir/install.log" >&2
      return 1
    }
    touch "$dir/.installed"
  fi
  local entry="$dir/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
  [ -f "$entry" ] || { log "filesystem: no $entry"; return 1; }
  record filesystem "$(command -v node) $entry"
}

# --- time and git: mcp-server-time and mcp-server-git from PyPI, each in a virtual environment of
# its own (each pins its dependencies) -------------------------------------------------------------

TIME_VERSION=2026.10.19
GIT_VERSION=2026.10.19

# pip_venv NAME SPEC: a venv at $CACHE/NAME with SPEC installed, once; a stamp marks success.
pip_venv() {
  local venv="$CACHE/$1" spec="$2"
  [ -f "$venv/.installed" ] && return 0
  rm -rf "$venv"
  log "pip install $spec (into $venv)"
  "$PYTHON" -m venv "$venv"
  retry "$venv/bin/pip" install --quiet --disable-pip-version-check "$spec" >"$CACHE/$1.log" 2>&1 || {
    tail -30 "$CACHE/$1.log" >&2
    return 1
  }
  touch "$venv/.installed"
}

setup_time() {
  pip_venv "mcp-time-$TIME_VERSION" "mcp-server-time==$TIME_VERSION"
  local exe="$CACHE/mcp-time-$TIME_VERSION/bin/mcp-server-time"
  [ -x "$exe" ] || { log "time: no $exe"; return 1; }
  record time "$exe --local-timezone UTC"
}

# The git server runs the `git` program (through GitPython); the repository is given per call
# (`repo_path`), so the command line names none.
setup_git() {
  command -v git >/dev/null || { log "git: needs the git program"; return 1; }
  pip_venv "mcp-git-$GIT_VERSION" "mcp-server-git==$GIT_VERSION"
  local exe="$CACHE/mcp-git-$GIT_VERSION/bin/mcp-server-git"
  [ -x "$exe" ] || { log "git: no $exe"; return 1; }
  record git "$exe"
}

# --- main ------------------------------------------------------------------------------------

main() {
  local targets=("$@") target
  if [ "${#targets[@]}" -eq 0 ] || [ "${targets[0]}" = all ]; then
    targets=()
    for target in $(compgen -A function | sed -n 's/^setup_//p'); do targets+=("$target"); done
  fi
  for target in "${targets[@]}"; do
    declare -F "setup_$target" >/dev/null || { log "unknown server: $target"; exit 2; }
    "setup_$target"
  done
  log "ready ($CACHE/mcp.env)"
}

main "$@"
