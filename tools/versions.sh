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

# --- Pulumi (CLI, Python language host, Kubernetes provider): tools/ensure-pulumi-binaries.sh ---
# Built from the wrapper modules in tools/gobuild/pulumi and tools/gobuild/pulumi-kubernetes; see
# docs/contributing/pulumi-binaries.md. PULUMI_K8S_VERSION is the version stamped into the provider
# binary and the one to pin pulumi-kubernetes to on PyPI; the module itself is required at a
# pseudo-version in tools/gobuild/pulumi-kubernetes/go.mod (the provider module has no tags).
PULUMI_VERSION=v3.259.0
PULUMI_K8S_VERSION=v4.25.0
T9K_PULUMI_BIN_DIR="$T9K_CACHE_ROOT/bin/pulumi-${PULUMI_VERSION}_k8s-${PULUMI_K8S_VERSION}_${GO_LINE:-go}"
export PULUMI_VERSION PULUMI_K8S_VERSION T9K_PULUMI_BIN_DIR

# --- Kubeflow's training operator, the reference in bench/operator.py: tools/ensure-bench-binaries.sh ---
# Built from the wrapper module in tools/gobuild/training-operator (go.mod requires the module at this
# version); its CRDs are copied from the same module's manifests/base/crds. The bench's Go plain
# client (tools/gobuild/plain-client, client-go at K8S_VERSION) is built into the same directory.
# Not used by `make test`.
TRAINING_OPERATOR_VERSION=v1.8.1
T9K_BENCH_BIN_DIR="$T9K_CACHE_ROOT/bin/training-operator-${TRAINING_OPERATOR_VERSION}_${GO_LINE:-go}"
export TRAINING_OPERATOR_VERSION T9K_BENCH_BIN_DIR

# --- GitOps tools the tests run (tools/ensure-gitops-binaries.sh), each in its own cache directory ---
# Helm (the chart in deploy/helm is linted, templated and installed with it), kstatus from
# sigs.k8s.io/cli-utils (what Flux and kpt read job health with), and a Lua runner for the Argo CD
# health checks. Built from wrapper modules in tools/gobuild/<name>. Argo CD's and Flux's CRDs are
# taken from their Go modules at these versions.
HELM_VERSION=v3.22.0
CLI_UTILS_VERSION=v0.37.2
GOPHER_LUA_VERSION=v1.1.2
ARGOCD_VERSION=v3.6.1
FLUX_KUSTOMIZE_VERSION=v1.10.1
FLUX_SOURCE_VERSION=v1.10.1
T9K_HELM_BIN_DIR="$T9K_CACHE_ROOT/bin/helm-${HELM_VERSION}_${GO_LINE:-go}"
T9K_KSTATUS_BIN_DIR="$T9K_CACHE_ROOT/bin/kstatus-${CLI_UTILS_VERSION}_${GO_LINE:-go}"
T9K_LUA_BIN_DIR="$T9K_CACHE_ROOT/bin/argocd-lua-${GOPHER_LUA_VERSION}_${GO_LINE:-go}"
T9K_GITOPS_CRDS_DIR="$T9K_CACHE_ROOT/crds/argocd-${ARGOCD_VERSION}_flux-${FLUX_KUSTOMIZE_VERSION}-${FLUX_SOURCE_VERSION}"
export HELM_VERSION CLI_UTILS_VERSION GOPHER_LUA_VERSION ARGOCD_VERSION FLUX_KUSTOMIZE_VERSION \
  FLUX_SOURCE_VERSION T9K_HELM_BIN_DIR T9K_KSTATUS_BIN_DIR T9K_LUA_BIN_DIR T9K_GITOPS_CRDS_DIR

# --- The real node (tools/realnode.py) and its images (tools/images.py) ---
# kubelet is built at K8S_VERSION from tools/gobuild/kubelet; CoreDNS with `go install` at its
# tag (its go.mod has no replace directives). The training image's Python packages come from
# PyPI at these versions: ColossalAI 0.5.0 allows torch <= 2.5.1, so the image holds that torch.
COREDNS_VERSION=v1.14.7
TRAIN_TORCH_VERSION=2.5.1
TRAIN_DEEPSPEED_VERSION=0.19.8
TRAIN_COLOSSALAI_VERSION=0.5.0
T9K_NODE_BIN_DIR="$T9K_CACHE_ROOT/bin/node-k8s-${K8S_VERSION}_coredns-${COREDNS_VERSION}_${GO_LINE:-go}"
export COREDNS_VERSION T9K_NODE_BIN_DIR

# --- actionlint, the GitHub Actions workflow linter `make lint` runs: tools/ensure-lint-binaries.sh ---
# Built from the wrapper module in tools/gobuild/actionlint (go.mod requires it at this version).
ACTIONLINT_VERSION=v1.7.12
T9K_ACTIONLINT_BIN_DIR="$T9K_CACHE_ROOT/bin/actionlint-${ACTIONLINT_VERSION}_${GO_LINE:-go}"
export ACTIONLINT_VERSION T9K_ACTIONLINT_BIN_DIR

# --- Kueue, the SIG's job queueing (tools/ensure-kueue-binaries.sh; started by tools/kueue.py) ---
# Built from the wrapper module in tools/gobuild/kueue (go.mod requires it at this version); its
# CRDs and webhook configurations are copied from the same module's config/components.
KUEUE_VERSION=v0.17.0
T9K_KUEUE_BIN_DIR="$T9K_CACHE_ROOT/bin/kueue-${KUEUE_VERSION}_${GO_LINE:-go}"
export KUEUE_VERSION T9K_KUEUE_BIN_DIR
