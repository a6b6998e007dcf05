#!/usr/bin/env bash
# Build Kueue's manager (sigs.k8s.io/kueue/cmd/kueue) from the Go module proxy into a cache
# directory outside the repository keyed by its version, and copy its CRDs and webhook
# configurations from the same module. A warm cache is reused at once.
#
#   tools/ensure-kueue-binaries.sh              # build what is missing, print the directory
#   tools/ensure-kueue-binaries.sh --print-dir  # print the directory and exit
#
# tools/kueue.py starts it against the local cluster; docs/contributing/test-cluster.md says how.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"
# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-kueue-binaries "$T9K_KUEUE_BIN_DIR" "Kueue" "$@"

grep -q "sigs.k8s.io/kueue $KUEUE_VERSION" "$here/gobuild/kueue/go.mod" ||
  { log "tools/gobuild/kueue/go.mod does not require sigs.k8s.io/kueue $KUEUE_VERSION"; exit 1; }

build_kueue() {
  (cd "$here/gobuild/kueue" && go build -ldflags "-s -w -X sigs.k8s.io/kueue/pkg/version.GitVersion=$KUEUE_VERSION" \
    -o "$bin_dir/kueue.partial" sigs.k8s.io/kueue/cmd/kueue)
  # The manifests come from the module the binary was built from, into the same directory.
  local mod
  mod="$(cd "$here/gobuild/kueue" && go mod download -json sigs.k8s.io/kueue | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
  mkdir -p "$bin_dir/crds"
  cp "$mod"/config/components/crd/bases/*.yaml "$bin_dir/crds/"
  cp "$mod/config/components/webhook/manifests.yaml" "$bin_dir/webhooks.yaml"
  chmod u+w "$bin_dir"/crds/*.yaml "$bin_dir/webhooks.yaml"
  mv "$bin_dir/kueue.partial" "$bin_dir/kueue"
}

ensure "kueue $KUEUE_VERSION" build_kueue kueue
printf '%-26s %s\n' "kueue" "$bin_dir/kueue ($KUEUE_VERSION)" >&2
echo "$bin_dir"
