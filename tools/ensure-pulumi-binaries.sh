#!/usr/bin/env bash
# Build the Pulumi CLI, the Pulumi Kubernetes resource provider and (when its module is required in
# tools/gobuild/pulumi/go.mod) the Python language host from the Go module proxy into a cache
# directory outside the repository, keyed by their versions. A warm cache is reused in well under a
# second.
#
#   tools/ensure-pulumi-binaries.sh              # build what is missing, print every binary's version
#   tools/ensure-pulumi-binaries.sh --print-dir  # print the cache directory and exit
#
# The wrapper modules with their go.sum live in tools/gobuild/pulumi and
# tools/gobuild/pulumi-kubernetes; docs/contributing/pulumi-binaries.md says why each step looks the
# way it does and which environment variables run `pulumi up` offline with these binaries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"

print_dir_only=false
[[ "${1:-}" == "--print-dir" ]] && print_dir_only=true

bin_dir="$T9K_PULUMI_BIN_DIR"
if $print_dir_only; then
  echo "$bin_dir"
  exit 0
fi

if ! command -v go >/dev/null 2>&1; then
  echo "error: Go is needed to build the Pulumi binaries (go1.25 or newer on PATH)." >&2
  exit 1
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOWORK=off
# -buildvcs=false: the provider's main package lives in this repository, so Go would otherwise stamp
# the repository's commit (and "modified") into the binary.
export GOFLAGS="-trimpath -modcacherw -mod=readonly -buildvcs=false"
mkdir -p "$bin_dir"

log() { printf '[ensure-pulumi-binaries] %s\n' "$*" >&2; }

lang_host_mod=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
provider_mod=github.com/pulumi/pulumi-kubernetes/provider/v4

# The language host is a separate, untagged module that the module proxy may not serve at any
# version (see the doc). It is built only when tools/gobuild/pulumi/go.mod requires it.
want_lang_host() {
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?${lang_host_mod//./\\.}[[:space:]]" "$here/gobuild/pulumi/go.mod"
}

build_pulumi() {
  # Same tags and version ldflag as upstream's .goreleaser.yml. The Python Automation API parses
  # `pulumi version` as semver and refuses anything below 3.1 (inline refresh/destroy: 3.181), so
  # an unstamped binary (v0.0.0 / "unknown") is unusable from Python.
  (cd "$here/gobuild/pulumi" && go build -tags osusergo,grpcnotrace \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$bin_dir/" github.com/pulumi/pulumi/pkg/v3/cmd/pulumi)
}

build_lang_host() {
  local sdk_dir
  (cd "$here/gobuild/pulumi" && go build -tags osusergo,grpcnotrace \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$PULUMI_VERSION" \
    -o "$bin_dir/" "$lang_host_mod")
  # The host stats <its own dir>/pulumi-language-python-exec; the script ships in the sdk/v3 module.
  sdk_dir="$(cd "$here/gobuild/pulumi" && go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)"
  install -m 0755 "$sdk_dir/python/cmd/pulumi-language-python-exec" "$bin_dir/"
}

generate_provider_embeds() {
  # Upstream's main.go embeds schema-embed.json and terraform-mapping-embed.json, which its
  # `go generate` (generate.go) writes from the committed schema.json and terraform-mapping.json
  # and git-ignores, so they are not in the module zip. Do the same here: stamp the schema's version
  # and re-serialise compactly. The outputs are git-ignored in tools/gobuild/pulumi-kubernetes.
  local wrap="$here/gobuild/pulumi-kubernetes" mod_dir
  mod_dir="$(cd "$wrap" && go mod download "$provider_mod" && go list -m -f '{{.Dir}}' "$provider_mod")"
  python3 - "$mod_dir/cmd/pulumi-resource-kubernetes" "$wrap" "${PULUMI_K8S_VERSION#v}" <<'EOF'
import json, os, shutil, sys
src, dst, version = sys.argv[1:4]
schema = json.load(open(os.path.join(src, "schema.json")))
schema["version"] = version
with open(os.path.join(dst, "schema-embed.json"), "w") as f:
    json.dump(schema, f, separators=(",", ":"))
mapping = json.load(open(os.path.join(src, "terraform-mapping.json")))
with open(os.path.join(dst, "terraform-mapping-embed.json"), "w") as f:
    json.dump(mapping, f, separators=(",", ":"))
# Newer provider versions also embed helm-mapping.json (committed upstream, so just copied).
if os.path.exists(os.path.join(src, "helm-mapping.json")):
    shutil.copy(os.path.join(src, "helm-mapping.json"), os.path.join(dst, "helm-mapping.json"))
EOF
}

build_provider() {
  generate_provider_embeds
  (cd "$here/gobuild/pulumi-kubernetes" && go build \
    -ldflags "-s -w -X github.com/pulumi/pulumi-kubernetes/provider/v4/pkg/version.Version=$PULUMI_K8S_VERSION" \
    -o "$bin_dir/pulumi-resource-kubernetes" .)
  # -trimpath keeps -ldflags out of the build info and the provider has no --version flag, so record
  # the stamped version next to the binary for the summary below.
  echo "$PULUMI_K8S_VERSION" >"$bin_dir/pulumi-resource-kubernetes.version"
}

ensure() {  # ensure NAME BUILD_FUNCTION BINARY...
  local name="$1" fn="$2"; shift 2
  local missing=false b
  for b in "$@"; do [[ -x "$bin_dir/$b" ]] || missing=true; done
  if $missing; then
    log "building $name (cold builds take minutes; the result is cached in $bin_dir)"
    local start=$SECONDS
    "$fn"
    log "built $name in $((SECONDS - start))s"
  fi
}

ensure "pulumi $PULUMI_VERSION" build_pulumi pulumi
have_lang_host=false
if [[ -x "$bin_dir/pulumi-language-python" && -x "$bin_dir/pulumi-language-python-exec" ]]; then
  have_lang_host=true
elif want_lang_host; then
  ensure "pulumi-language-python" build_lang_host pulumi-language-python pulumi-language-python-exec
  have_lang_host=true
else
  log "skipping pulumi-language-python: $lang_host_mod is not required in tools/gobuild/pulumi/go.mod" \
    "(inline Automation API programs do not need it; see docs/contributing/pulumi-binaries.md)"
fi
ensure "pulumi-resource-kubernetes $PULUMI_K8S_VERSION" build_provider pulumi-resource-kubernetes

printf '%-28s %s\n' "pulumi" "$("$bin_dir/pulumi" version)"
if $have_lang_host; then
  printf '%-28s %s\n' "pulumi-language-python" "$(go version -m "$bin_dir/pulumi-language-python" |
    awk '$1 == "mod" {print $3; exit}')"
fi
printf '%-28s %s (%s %s)\n' "pulumi-resource-kubernetes" \
  "$(cat "$bin_dir/pulumi-resource-kubernetes.version" 2>/dev/null || echo '?')" "$provider_mod" \
  "$(go version -m "$bin_dir/pulumi-resource-kubernetes" | awk -v m="$provider_mod" '$1 == "dep" && $2 == m {print $3}')"
echo "$bin_dir"
