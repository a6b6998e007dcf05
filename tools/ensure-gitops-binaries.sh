#!/usr/bin/env bash
# Build the GitOps tools the tests run, from the Go module proxy, into cache directories outside the
# repository keyed by version (tools/versions.sh); take Argo CD's and Flux's CRDs from their Go
# modules. A warm cache is reused at once.
#
#   tools/ensure-gitops-binaries.sh              # build what is missing, print the directories
#
# Wrapper modules with their go.sum live in tools/gobuild/<name>/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"
# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"

# --- helm (owner: install helper) ---

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

# --- Argo CD and Flux CRDs (owner: gitops-docs helper) ---
