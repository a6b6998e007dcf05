# Shared by tools/ensure-binaries.sh and tools/ensure-pulumi-binaries.sh (sourced, not run):
# the build environment, `--print-dir`, logging, and "build NAME unless its binaries exist".
#
#   build_setup LOG_NAME BIN_DIR "what is built" "$@"
#   ensure "name version" build_function binary...

build_setup() {
  _build_log_name="$1"
  bin_dir="$2"
  local what="$3"
  shift 3
  if [[ "${1:-}" == "--print-dir" ]]; then
    echo "$bin_dir"
    exit 0
  fi
  if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is needed to build $what (go1.25 or newer on PATH)." >&2
    exit 1
  fi
  export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off
  # -buildvcs=false: a main package inside this repository would otherwise get the repository's
  # commit (and "modified") stamped into it.
  export GOFLAGS="-trimpath -modcacherw -mod=readonly -buildvcs=false"
  mkdir -p "$bin_dir"
}

log() { printf '[%s] %s\n' "$_build_log_name" "$*" >&2; }

ensure() {  # ensure NAME BUILD_FUNCTION BINARY...
  local name="$1" fn="$2"
  shift 2
  local missing=false b
  for b in "$@"; do [[ -x "$bin_dir/$b" ]] || missing=true; done
  if $missing; then
    log "building $name (cold builds take minutes; the result is cached in $bin_dir)"
    local start=$SECONDS
    "$fn"
    log "built $name in $((SECONDS - start))s"
  fi
}
