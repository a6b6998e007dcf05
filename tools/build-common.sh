# Shared by the tools/ensure-*-binaries.sh scripts (sourced, not run):
# the build environment, `--print-dir`, logging, and "build NAME unless its binaries exist".
#
#   build_setup LOG_NAME BIN_DIR "what is built" "$@"
#   ensure "name version" build_function binary...
#   k8s_ldflags   # -ldflags for a k8s.io/kubernetes command at $K8S_VERSION

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

k8s_ldflags() {
  local v="$K8S_VERSION" maj min ldf p
  maj="${v#v}"; maj="${maj%%.*}"
  min="${v#v*.}"; min="${min%%.*}"
  ldf="-s -w"
  # The same two packages that upstream's hack/lib/version.sh stamps; without them the server
  # reports v0.0.0-master and clients (kubectl, the Pulumi provider) misjudge its version.
  for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldf="$ldf -X $p.gitVersion=$v -X $p.gitMajor=$maj -X $p.gitMinor=$min"
    ldf="$ldf -X $p.gitTreeState=clean -X $p.gitCommit=unknown -X $p.buildDate=2000-01-01T00:00:00Z"
  done
  echo "$ldf"
}
