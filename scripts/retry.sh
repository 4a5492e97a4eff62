# Sourced by the set-up scripts: `log` (with the script's name) and `retry`, for downloads from
# the package registries, which fail now and then on these machines.

log() { printf '%s: %s\n' "$(basename "$0" .sh)" "$*" >&2; }

# retry CMD...: run CMD up to 4 times, waiting 5, 10, 15 s between tries.
retry() {
  local n=1
  until "$@"; do
    if [ "$n" -ge 4 ]; then
      log "failed 4 times: $*"
      return 1
    fi
    log "try $n failed, again in $((n * 5)) s: $*"
    sleep $((n * 5))
    n=$((n + 1))
  done
}
