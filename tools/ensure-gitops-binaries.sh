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

# --- argocd-lua (owner: argocd helper) ---

# --- Argo CD and Flux CRDs (owner: gitops-docs helper) ---
