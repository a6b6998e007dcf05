#!/usr/bin/env bash
# Build actionlint, the linter `make lint` runs on the GitHub Actions workflows in
# .github/workflows, from the Go module proxy into a cache directory outside the repository keyed
# by its version (tools/versions.sh). A warm cache is reused at once.
#
#   tools/ensure-lint-binaries.sh              # build what is missing, print the version, the dir last
#   tools/ensure-lint-binaries.sh --print-dir  # print the cache directory and exit
#
# The wrapper module with its go.sum lives in tools/gobuild/actionlint/. actionlint runs
# shellcheck and pyflakes on `run:` scripts only when it finds them on PATH; neither is installed
# for it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"
# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-lint-binaries "$T9K_ACTIONLINT_BIN_DIR" "actionlint" "$@"

module="$here/gobuild/actionlint"
grep -q "^[[:space:]]*github.com/rhysd/actionlint $ACTIONLINT_VERSION\b" "$module/go.mod" ||
  { log "tools/gobuild/actionlint/go.mod does not require actionlint $ACTIONLINT_VERSION"; exit 1; }

# The version stamp of upstream's release builds (.goreleaser.yaml), without the leading v;
# unstamped, `actionlint -version` would say the wrapper module's "(devel)".
build_actionlint() {
  (cd "$module" && go build -ldflags "-s -w -X github.com/rhysd/actionlint.version=${ACTIONLINT_VERSION#v}" \
    -o "$bin_dir/actionlint" github.com/rhysd/actionlint/cmd/actionlint)
}

ensure "actionlint $ACTIONLINT_VERSION" build_actionlint actionlint
printf '%-26s %s\n' "actionlint" "$("$bin_dir/actionlint" -version | head -n1)"
echo "$bin_dir"
