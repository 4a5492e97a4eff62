#!/usr/bin/env bash
# Installs the npm ACP client the cross-implementation test drives `totem acp` with
# (tests/acp/test_node_client.py): @agentclientprotocol/sdk, version-pinned, retried, cached
# outside the clone (TOTEM_TEST_CACHE, default ~/.cache/totem-test) in a folder of its own, so a
# second run takes a fraction of a second. Prints the folder holding node_modules.
set -euo pipefail

CACHE="${TOTEM_TEST_CACHE:-$HOME/.cache/totem-test}"
SDK_VERSION=2.4.0
DIR="$CACHE/acp-sdk-$SDK_VERSION"

# log, retry
source "$(dirname "${BASH_SOURCE[0]}")/retry.sh"

command -v node >/dev/null && command -v npm >/dev/null || { log "needs node and npm (Node 20+)"; exit 1; }
if [ ! -f "$DIR/.installed" ]; then
  rm -rf "$DIR"
  mkdir -p "$DIR"
  log "npm install @agentclientprotocol/sdk@$SDK_VERSION (into $DIR)"
  # Its peer zod comes with it (npm installs peers); the MCP server peer is not used by a client.
  (cd "$DIR" && echo '{"private": true, "type": "module"}' >package.json &&
    retry npm install --no-save --no-audit --no-fund --loglevel=error --legacy-peer-deps \
      "@agentclientprotocol/sdk@$SDK_VERSION" "zod@^3.25.76" >"$DIR/install.log" 2>&1) || {
    tail -30 "$DIR/install.log" >&2
    exit 1
  }
  touch "$DIR/.installed"
fi
echo "$DIR"
