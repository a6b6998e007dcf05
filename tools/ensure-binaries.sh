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
