#!/usr/bin/env bash
# Build the GitOps tools the tests run, from the Go module proxy, into cache directories outside the
# repository keyed by version (tools/versions.sh); take Argo CD's and Flux's CRDs from their Go
# modules. A warm cache is reused at once.
#
#   tools/ensure-gitops-binaries.sh                  # build what is missing, print the directories
#   tools/ensure-gitops-binaries.sh --print-lua-dir  # the Lua runner's directory (argocd-lua)
#
# Wrapper modules with their go.sum live in tools/gobuild/<name>/.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=tools/versions.sh
source "$here/versions.sh"
# shellcheck source=tools/build-common.sh
source "$here/build-common.sh"

# Where a test finds one tool's directory without building anything (each section's own flag).
case "${1:-}" in
  --print-lua-dir) echo "$T9K_LUA_BIN_DIR"; exit 0 ;;  # argocd-lua
esac

# --- helm (owner: install helper) ---

# --- kstatus (owner: kstatus helper) ---

# --- argocd-lua (owner: argocd helper) ---
# A runner for Argo CD health scripts on gopher-lua $GOPHER_LUA_VERSION, the interpreter Argo CD
# embeds, mirroring Argo CD's sandbox (tools/gobuild/argocd-lua/main.go says what and why; Argo
# CD's own util/lua needs a newer Go than the tests build with). Its source is in this repository,
# so a stamp of the source's hash rebuilds it when the source changes.
# (`--print-lua-dir`, handled at the top, prints its directory.)
argocd_lua_src="$here/gobuild/argocd-lua"
argocd_lua_stamp() { cat "$argocd_lua_src"/go.mod "$argocd_lua_src"/go.sum "$argocd_lua_src"/*.go | sha256sum | cut -c1-16; }
build_argocd_lua() {
  (cd "$argocd_lua_src" && go build -ldflags "-s -w" -o "$bin_dir/argocd-lua.tmp" .)
  mv "$bin_dir/argocd-lua.tmp" "$bin_dir/argocd-lua"
  argocd_lua_stamp > "$bin_dir/argocd-lua.source"
}
build_setup ensure-gitops-binaries "$T9K_LUA_BIN_DIR" "the Argo CD Lua runner"
if [[ "$(cat "$bin_dir/argocd-lua.source" 2>/dev/null)" != "$(argocd_lua_stamp)" ]]; then
  rm -f "$bin_dir/argocd-lua"
fi
ensure "argocd-lua (gopher-lua $GOPHER_LUA_VERSION)" build_argocd_lua argocd-lua
echo "$bin_dir"

# --- Argo CD and Flux CRDs (owner: gitops-docs helper) ---
