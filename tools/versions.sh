# Versions of the binaries the tests build from the Go module proxy. Bumping one here changes the
# cache key, so the next run rebuilds into a fresh directory. Keep the wrapper go.mod files in
# tools/gobuild/ in step (run `go mod tidy` there after a bump and commit go.sum).
K8S_VERSION=v1.34.10
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
GO_LINE="$(go env GOVERSION 2>/dev/null | sed -E 's/^go([0-9]+\.[0-9]+).*/go\1/')"
T9K_CACHE_ROOT="${T9K_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/t9k-sdk}"
T9K_BIN_DIR="$T9K_CACHE_ROOT/bin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}_${GO_LINE:-go}"
export K8S_VERSION ETCD_VERSION KWOK_VERSION T9K_BIN_DIR
