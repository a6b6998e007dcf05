#!/usr/bin/env bash
# Build the GitOps tools the tests run, from the Go module proxy, into cache directories outside the
# repository keyed by version (tools/versions.sh); take Argo CD's and Flux's CRDs from their Go
# modules. A warm cache is reused at once.
#
#   tools/ensure-gitops-binaries.sh                  # build what is missing, print the directories
#   tools/ensure-gitops-binaries.sh --print-lua-dir  # the Lua runner's directory (argocd-lua)
#   tools/ensure-gitops-binaries.sh --print-crds-dir # Argo CD's and Flux's CRDs
#
# Wrapper modules with their go.sum live in tools/gobuild/<name>/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"
# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"

# Where a test finds one tool's directory without building anything (each section's own flag).
case "${1:-}" in
  --print-lua-dir) echo "$T9K_LUA_BIN_DIR"; exit 0 ;;  # argocd-lua
  --print-crds-dir) echo "$T9K_GITOPS_CRDS_DIR"; exit 0 ;;  # Argo CD's and Flux's CRDs
esac

# --- helm (owner: install helper) ---
# Helm 3 from helm.sh/helm/v3 (cmd/helm), for the chart in deploy/helm/t9k-operator: `helm lint`,
# `helm template` and a real `helm install` in tests/cluster/test_install_gitops.py. The ldflags are
# the ones upstream's Makefile sets for a tagged release: the version, and the Kubernetes version
# `helm template` assumes without a cluster (client-go's minor; 0.N -> 1.N).
#   tools/ensure-gitops-binaries.sh --print-helm-dir   # print T9K_HELM_BIN_DIR and exit
if [[ "${1:-}" == "--print-helm-dir" ]]; then
  echo "$T9K_HELM_BIN_DIR"
  exit 0
fi

helm_ldflags() {
  local k8s minor ldf p
  k8s="$(cd "$here/gobuild/helm" && go list -m -f '{{.Version}}' k8s.io/client-go)"  # v0.N.P
  minor="${k8s#v0.}"; minor="${minor%%.*}"
  ldf="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
  ldf="$ldf -X helm.sh/helm/v3/internal/version.metadata= -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldf="$ldf -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
  done
  echo "$ldf"
}

build_helm() {
  (cd "$here/gobuild/helm" && go build -ldflags "$(helm_ldflags)" -o "$bin_dir/helm" helm.sh/helm/v3/cmd/helm)
}

# Another section's --print-... flag: build nothing here.
if [[ "${1:-}" != --print-* ]]; then
  (
    build_setup ensure-gitops-binaries "$T9K_HELM_BIN_DIR" "helm"
    ensure "helm $HELM_VERSION" build_helm helm
    printf '%-26s %s\n' "helm" "$("$bin_dir/helm" version --short)"
    echo "$bin_dir"
  )
fi

# --- kstatus (owner: kstatus helper) ---
# tools/gobuild/kstatus/main.go: status.Compute from sigs.k8s.io/cli-utils (CLI_UTILS_VERSION, the
# version go.mod requires) on objects read from files or stdin, one JSON result per object. What
# Flux's health checks and kpt say about a job, without a cluster (tests/cluster/test_kstatus.py).
# Tests find it in $T9K_KSTATUS_BIN_DIR as tools/versions.sh sets it (tests/kstatus_runner.py).
build_kstatus() {
  (cd "$here/gobuild/kstatus" && go build -o "$T9K_KSTATUS_BIN_DIR/kstatus" .)
}
(
  build_setup gitops-binaries "$T9K_KSTATUS_BIN_DIR" "kstatus (sigs.k8s.io/cli-utils)"
  ensure "kstatus (cli-utils $CLI_UTILS_VERSION)" build_kstatus kstatus
  grep -q "sigs.k8s.io/cli-utils $CLI_UTILS_VERSION\$" "$here/gobuild/kstatus/go.mod" ||
    { log "tools/gobuild/kstatus/go.mod does not require cli-utils $CLI_UTILS_VERSION"; exit 1; }
  printf '%-26s %s\n' "kstatus" "$T9K_KSTATUS_BIN_DIR/kstatus (cli-utils $CLI_UTILS_VERSION)" >&2
)

# --- argocd-lua (owner: argocd helper) ---
# A runner for Argo CD health scripts on gopher-lua $GOPHER_LUA_VERSION, the interpreter Argo CD
# embeds, mirroring Argo CD's sandbox (tools/gobuild/argocd-lua/main.go says what and why; Argo
# CD's own util/lua needs a newer Go than the tests build with). Its source is in this repository,
# so a stamp of the source's hash rebuilds it when the source changes.
# (`--print-lua-dir`, handled at the top, prints its directory.)
argocd_lua_src="$here/gobuild/argocd-lua"
argocd_lua_stamp() { cat "$argocd_lua_src"/go.mod "$argocd_lua_src"/go.sum "$argocd_lua_src"/*.go | sha256sum | cut -c1-16; }
build_argocd_lua() {
  (cd "$argocd_lua_src" && go build -ldflags "-s -w" -o "$bin_dir/argocd-lua.tmp" .)
  mv "$bin_dir/argocd-lua.tmp" "$bin_dir/argocd-lua"
  argocd_lua_stamp > "$bin_dir/argocd-lua.source"
}
build_setup ensure-gitops-binaries "$T9K_LUA_BIN_DIR" "the Argo CD Lua runner"
if [[ "$(cat "$bin_dir/argocd-lua.source" 2>/dev/null)" != "$(argocd_lua_stamp)" ]]; then
  rm -f "$bin_dir/argocd-lua"
fi
ensure "argocd-lua (gopher-lua $GOPHER_LUA_VERSION)" build_argocd_lua argocd-lua
echo "$bin_dir"

# --- Argo CD and Flux CRDs (owner: gitops-docs helper) ---
# Copied from the Go modules themselves (what `go mod download` verifies against sum.golang.org),
# not from release downloads: Argo CD's Application and AppProject, Flux's Kustomization and
# GitRepository (and the other source kinds). examples/gitops is dry-run applied against them.
# These modules declare `go 1.27`: with GOTOOLCHAIN=local an older go still downloads and verifies
# the zip but reports an error instead of the directory, so the files are read from the zip.
gitops_crds() {
  local out="$T9K_GITOPS_CRDS_DIR"
  [[ -f "$out/.complete" ]] && return 0
  if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is needed to fetch Argo CD's and Flux's CRDs (go1.25 or newer on PATH)." >&2
    exit 1
  fi
  log_crds() { printf '[ensure-gitops-binaries] %s\n' "$*" >&2; }
  log_crds "fetching Argo CD $ARGOCD_VERSION and Flux kustomize-controller $FLUX_KUSTOMIZE_VERSION," \
    "source-controller $FLUX_SOURCE_VERSION CRDs from the Go module proxy into $out"
  local tmp
  tmp="$(mktemp -d)"
  # outside any module (GOFLAGS without -mod), with the same proxy and checksum database
  local spec module version zip
  for spec in \
    "github.com/argoproj/argo-cd/v3@$ARGOCD_VERSION manifests/crds/application-crd.yaml manifests/crds/appproject-crd.yaml" \
    "github.com/fluxcd/kustomize-controller@$FLUX_KUSTOMIZE_VERSION config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml" \
    "github.com/fluxcd/source-controller@$FLUX_SOURCE_VERSION config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml config/crd/bases/source.toolkit.fluxcd.io_helmcharts.yaml config/crd/bases/source.toolkit.fluxcd.io_buckets.yaml"; do
    read -r module_at files <<<"$spec"
    module="${module_at%@*}"
    version="${module_at#*@}"
    # exit status ignored: see above; the zip exists only once downloaded and verified
    zip="$( (cd "$tmp" && GOTOOLCHAIN=local GOWORK=off GOFLAGS=-modcacherw go mod download -json "$module_at" \
      || true) | sed -n 's/^[[:space:]]*"Zip": "\(.*\)",$/\1/p')"
    if [[ -z "$zip" || ! -f "$zip" ]]; then
      echo "error: could not download the Go module $module_at (see \`go mod download -json $module_at\`)" >&2
      rm -rf "$tmp"
      exit 1
    fi
    # shellcheck disable=SC2086
    python3 - "$zip" "$module@$version" "$tmp/crds" $files <<'PY'
import pathlib, sys, zipfile
archive, prefix, out, *names = sys.argv[1:]
pathlib.Path(out).mkdir(exist_ok=True)
with zipfile.ZipFile(archive) as z:
    for name in names:
        try:
            data = z.read(f"{prefix}/{name}")
        except KeyError:
            sys.exit(f"error: {prefix} has no {name}")
        pathlib.Path(out, name.rsplit("/", 1)[-1]).write_bytes(data)
PY
  done
  touch "$tmp/crds/.complete"
  mkdir -p "$(dirname "$out")"
  rm -rf "$out" && mv "$tmp/crds" "$out"
  rm -rf "$tmp"
}

# (`--print-crds-dir`, handled at the top, prints its directory.)
gitops_crds
echo "$T9K_GITOPS_CRDS_DIR"
