#!/usr/bin/env bash
# Build the real node's binaries from the Go module proxy into a cache directory outside the
# repository, keyed by their versions: kubelet (from the wrapper module tools/gobuild/kubelet,
# with the same version stamps as the control plane) and CoreDNS (`go install` at its tag; its
# go.mod has no replace directives). containerd, runc and the CNI plugins are Debian packages
# (tools/ensure-system-packages.sh). A warm cache is reused in well under a second.
#
#   tools/ensure-node-binaries.sh              # build what is missing, print the versions
#   tools/ensure-node-binaries.sh --print-dir  # print the cache directory and exit
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"
# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-node-binaries "$T9K_NODE_BIN_DIR" "the real node's binaries" "$@"


build_kubelet() {
  (cd "$here/gobuild/kubelet" && go build -ldflags "$(k8s_ldflags)" -o "$bin_dir/kubelet" k8s.io/kubernetes/cmd/kubelet)
}

build_coredns() {
  # `go install pkg@version` ignores the main module and verifies the module against the
  # checksum database; -mod=readonly does not apply to it.
  GOFLAGS="-trimpath -modcacherw -buildvcs=false" GOBIN="$bin_dir" \
    go install -ldflags "-s -w" "github.com/coredns/coredns@$COREDNS_VERSION"
}

ensure "kubelet $K8S_VERSION" build_kubelet kubelet
ensure "coredns $COREDNS_VERSION" build_coredns coredns

printf '%-10s %s\n' kubelet "$("$bin_dir/kubelet" --version)"
printf '%-10s %s\n' coredns "$("$bin_dir/coredns" -version | head -n1)"
echo "$bin_dir"
