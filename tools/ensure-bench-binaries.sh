#!/usr/bin/env bash
# Build Kubeflow's training operator (the Go reference that bench/operator.py measures our operator
# against) from the Go module proxy into a cache directory outside the repository, keyed by its
# version, and copy its CRDs from the same module next to it. A warm cache is reused at once.
# Only `make bench-operator` needs it; `make test` does not.
#
#   tools/ensure-bench-binaries.sh              # build what is missing, print the directory
#   tools/ensure-bench-binaries.sh --print-dir  # print the cache directory and exit
#
# The wrapper module with its go.sum lives in tools/gobuild/training-operator/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"

# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-bench-binaries "$T9K_BENCH_BIN_DIR" "Kubeflow's training operator" "$@"

module=github.com/kubeflow/training-operator

build_training_operator() {
  (cd "$here/gobuild/training-operator" && go build -ldflags "-s -w" -o "$bin_dir/training-operator" \
    "$module/cmd/training-operator.v1")
}

copy_crds() {
  local dir
  dir="$(cd "$here/gobuild/training-operator" && go mod download -json "$module@$TRAINING_OPERATOR_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  if [[ -z "$dir" || ! -d "$dir/manifests/base/crds" ]]; then
    echo "error: the module $module@$TRAINING_OPERATOR_VERSION has no manifests/base/crds" >&2
    exit 1
  fi
  mkdir -p "$bin_dir/crds.tmp"
  cp "$dir"/manifests/base/crds/kubeflow.org_*.yaml "$bin_dir/crds.tmp/"
  chmod u+w "$bin_dir"/crds.tmp/*.yaml
  rm -rf "$bin_dir/crds" && mv "$bin_dir/crds.tmp" "$bin_dir/crds"
}

ensure "training-operator $TRAINING_OPERATOR_VERSION" build_training_operator training-operator
[[ -f "$bin_dir/crds/kubeflow.org_pytorchjobs.yaml" ]] || copy_crds

echo "$bin_dir"
