#!/usr/bin/env bash
# Installs the official MCP conformance suite the server test runs against `totem mcp serve`
# (tests/mcp_server/test_conformance.py): @modelcontextprotocol/conformance, version-pinned, and
# the Node 24 it needs (node.sh, shared with the editor tests), retried, cached outside the clone
# (TOTEM_TEST_CACHE, default ~/.cache/totem-test), so a second run takes a fraction of a second.
# Prints two lines: the node binary, and the suite's package folder.
set -euo pipefail

CACHE="${TOTEM_TEST_CACHE:-$HOME/.cache/totem-test}"
mkdir -p "$CACHE"
SUITE_VERSION=0.2.0-alpha.12
DIR="$CACHE/mcp-conformance-$SUITE_VERSION"

# log, retry
source "$(dirname "${BASH_SOURCE[0]}")/retry.sh"
# apt_install, npm_into, setup_node (NODE_HOME)
source "$(dirname "${BASH_SOURCE[0]}")/node.sh"

setup_node
npm_into "$DIR" "@modelcontextprotocol/conformance@$SUITE_VERSION"
SUITE="$DIR/node_modules/@modelcontextprotocol/conformance"
[ -f "$SUITE/dist/index.js" ] || { log "the suite did not install in $DIR"; exit 1; }
echo "$NODE_HOME/bin/node"
echo "$SUITE"
