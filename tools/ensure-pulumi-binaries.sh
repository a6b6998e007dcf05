#!/usr/bin/env bash
# Build the Pulumi CLI, the Python language host and the Pulumi Kubernetes resource provider from
# the Go module proxy into a cache directory outside the repository, keyed by their versions. A warm
# cache is reused in well under a second.
#
#   tools/ensure-pulumi-binaries.sh              # build what is missing, print every binary's version
#   tools/ensure-pulumi-binaries.sh --print-dir  # print the cache directory and exit
#
# The wrapper modules with their go.sum live in tools/gobuild/pulumi, tools/gobuild/pulumi-kubernetes
# and tools/gobuild/pulumi-language-python; docs/contributing/pulumi-binaries.md says why each step
# looks the way it does and which environment variables run `pulumi up` offline with these
# binaries.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"

# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"
build_setup ensure-pulumi-binaries "$T9K_PULUMI_BIN_DIR" "the Pulumi binaries" "$@"

lang_host_mod=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
provider_mod=github.com/pulumi/pulumi-kubernetes/provider/v4

# The current language host is a separate, untagged module that the module proxy serves at no
# version (see the doc). If tools/gobuild/pulumi/go.mod ever requires it, it is built from there;
# otherwise the host of sdk/v3 v3.79.0 (the last release where it is a package of the tagged sdk/v3
# module) is built from tools/gobuild/pulumi-language-python.
legacy_lang_host_pkg=github.com/pulumi/pulumi/sdk/v3/python/cmd/pulumi-language-python
want_lang_host() {
  grep -Eq "^[[:space:]]*(require[[:space:]]+)?${lang_host_mod//./\\.}[[:space:]]" "$here/gobuild/pulumi/go.mod"
}
if want_lang_host; then
  lang_host_dir="$here/gobuild/pulumi" lang_host_pkg="$lang_host_mod"
else
  lang_host_dir="$here/gobuild/pulumi-language-python" lang_host_pkg="$legacy_lang_host_pkg"
fi
# The sdk/v3 version the host is built from: its version stamp and its cache key (a .version file
# next to the binary, so changing the wrapper's go.mod rebuilds it).
# (Read from go.mod rather than `go list -m`, which would cost a module-graph load on every run.)
lang_host_version="$(awk '$1 == "require" { $0 = substr($0, 9) }
  $1 == "github.com/pulumi/pulumi/sdk/v3" { print $2; exit }' "$lang_host_dir/go.mod")"

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
  rm -f "$bin_dir/pulumi-language-python.version"
  # Stamped with the version of the sdk/v3 module it comes from (what `pulumi about` reports).
  (cd "$lang_host_dir" && go build -tags osusergo,grpcnotrace \
    -ldflags "-s -w -X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$lang_host_version" \
    -o "$bin_dir/" "$lang_host_pkg")
  # The host stats <its own dir>/pulumi-language-python-exec and runs it with the program's Python;
  # the script ships in the same sdk/v3 module version (the PyPI wheel does not contain it).
  sdk_dir="$(cd "$lang_host_dir" && go mod download github.com/pulumi/pulumi/sdk/v3 &&
    go list -m -f '{{.Dir}}' github.com/pulumi/pulumi/sdk/v3)"
  install -m 0755 "$sdk_dir/python/cmd/pulumi-language-python-exec" "$bin_dir/"
  echo "$lang_host_version" >"$bin_dir/pulumi-language-python.version"
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

ensure "pulumi $PULUMI_VERSION" build_pulumi pulumi
if [[ "$(cat "$bin_dir/pulumi-language-python.version" 2>/dev/null)" != "$lang_host_version" ]]; then
  rm -f "$bin_dir/pulumi-language-python"  # built from another sdk/v3 version (or unfinished)
fi
ensure "pulumi-language-python $lang_host_version" build_lang_host \
  pulumi-language-python pulumi-language-python-exec
ensure "pulumi-resource-kubernetes $PULUMI_K8S_VERSION" build_provider pulumi-resource-kubernetes

printf '%-28s %s\n' "pulumi" "$("$bin_dir/pulumi" version)"
printf '%-28s %s (%s)\n' "pulumi-language-python" "$lang_host_version" "$(go version -m \
  "$bin_dir/pulumi-language-python" | awk '$1 == "path" {print $2; exit}')"
printf '%-28s %s (%s %s)\n' "pulumi-resource-kubernetes" \
  "$(cat "$bin_dir/pulumi-resource-kubernetes.version" 2>/dev/null || echo '?')" "$provider_mod" \
  "$(go version -m "$bin_dir/pulumi-resource-kubernetes" | awk -v m="$provider_mod" '$1 == "dep" && $2 == m {print $3}')"
echo "$bin_dir"
