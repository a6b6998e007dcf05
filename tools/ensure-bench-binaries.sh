#!/usr/bin/env bash
# Build what bench/operator.py runs beside our operator, from the Go module proxy, into a cache
# directory outside the repository keyed by their versions: Kubeflow's training operator (with its
# CRDs, copied from the same module) and the Go plain client (`plain-go`, client-go at the
# cluster's K8S_VERSION; its binary's name carries a hash of its wrapper module, main.go included,
# so an edit builds a new one). A warm cache is reused at once. Only `make bench-operator` needs
# them; `make test` does not.
#
#   tools/ensure-bench-binaries.sh                       # build what is missing, print the directory
#   tools/ensure-bench-binaries.sh --print-dir           # print the cache directory and exit
#   tools/ensure-bench-binaries.sh --plain-client        # build the Go plain client only, print its path
#   tools/ensure-bench-binaries.sh --print-plain-client  # print that path (built or not) and exit
#
# The wrapper modules with their go.sum live in tools/gobuild/training-operator/ and
# tools/gobuild/plain-client/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"

plain_module="$here/gobuild/plain-client"
plain_key="$(cat "$plain_module/go.mod" "$plain_module/go.sum" "$plain_module/main.go" | sha256sum | cut -c1-12)"
plain_client="plain-client-k8s-${K8S_VERSION}-$plain_key"
if [[ "${1:-}" == "--print-plain-client" ]]; then
  echo "$T9K_BENCH_BIN_DIR/$plain_client"
  exit 0
fi

# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-bench-binaries "$T9K_BENCH_BIN_DIR" "the benchmark's Go binaries" "$@"

build_plain_client() {
  # client-go at the cluster's version: v0.X.Y for Kubernetes v1.X.Y
  if ! grep -q "^[[:space:]]*k8s.io/client-go ${K8S_VERSION/v1./v0.}\$" "$plain_module/go.mod"; then
    echo "error: $plain_module/go.mod must require k8s.io/client-go ${K8S_VERSION/v1./v0.} (K8S_VERSION is" \
      "$K8S_VERSION in tools/versions.sh); run go mod tidy there after changing it" >&2
    exit 1
  fi
  (cd "$plain_module" && go build -ldflags "-s -w" -o "$bin_dir/$plain_client" .)
}

ensure "the Go plain client (client-go ${K8S_VERSION/v1./v0.})" build_plain_client "$plain_client"
if [[ "${1:-}" == "--plain-client" ]]; then
  echo "$bin_dir/$plain_client"
  exit 0
fi

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
