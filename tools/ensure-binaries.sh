#!/usr/bin/env bash
# Build the real control-plane binaries (etcd, kube-apiserver, kube-controller-manager,
# kube-scheduler, kwok) from the Go module proxy into a cache directory outside the repository,
# keyed by their versions. A warm cache is reused in well under a second.
#
#   tools/ensure-binaries.sh            # build what is missing, print every binary's version
#   tools/ensure-binaries.sh --print-dir  # print the cache directory and exit
#
# The wrapper modules with their go.sum live in tools/gobuild/<component>/; see
# docs/contributing/test-cluster.md for why each one looks the way it does.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"

# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-binaries "$T9K_BIN_DIR" "the test cluster binaries" "$@"


build_k8s() {
  (cd "$here/gobuild/k8s" && go build -ldflags "$(k8s_ldflags)" -o "$bin_dir/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler)
}

# kubectl (with its built-in kustomize) checks the GitOps install files: `kubectl kustomize` and
# `kubectl apply --server-side --dry-run=server` against the test cluster.
build_kubectl() {
  (cd "$here/gobuild/kubectl" && go build -ldflags "$(k8s_ldflags)" -o "$bin_dir/kubectl" k8s.io/kubernetes/cmd/kubectl)
}

build_etcd() {
  (cd "$here/gobuild/etcd" && go build -ldflags "-s -w" -o "$bin_dir/etcd" go.etcd.io/etcd/server/v3)
}

build_kwok() {
  (cd "$here/gobuild/kwok" && go build -ldflags "-s -w" -o "$bin_dir/kwok" sigs.k8s.io/kwok/cmd/kwok)
}

ensure "etcd $ETCD_VERSION" build_etcd etcd
ensure "kubernetes $K8S_VERSION" build_k8s kube-apiserver kube-controller-manager kube-scheduler
ensure "kwok $KWOK_VERSION" build_kwok kwok
ensure "kubectl $K8S_VERSION" build_kubectl kubectl

printf '%-26s %s\n' "etcd" "$("$bin_dir/etcd" --version | head -n1)"
for b in kube-apiserver kube-controller-manager kube-scheduler; do
  printf '%-26s %s\n' "$b" "$("$bin_dir/$b" --version)"
done
printf '%-26s %s\n' "kubectl" "$("$bin_dir/kubectl" version --client | head -n1)"
printf '%-26s %s\n' "kwok" "$("$bin_dir/kwok" --version 2>&1 | head -n1)"
echo "$bin_dir"
