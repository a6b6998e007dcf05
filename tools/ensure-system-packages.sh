#!/usr/bin/env bash
# Debian packages the tests need beyond the machine image, installed with apt-get (the registry
# this project may use); a no-op when they are present:
# * OpenSSH's server and client (the bootstrap tests run real sshd in network namespaces);
# * the real node (tools/realnode.py): containerd, runc and the reference CNI plugins;
# * the real node's images (tools/images.py): mmdebstrap, and gcc with a static libc for pause;
# * iproute2 and util-linux (ip, unshare, nsenter);
# * Chromium, headless: tests/sdk/test_site_layout.py looks at the built site as a reader would.
set -euo pipefail
missing=()
[[ -x /usr/sbin/sshd ]] || missing+=(openssh-server)
command -v ssh >/dev/null 2>&1 || missing+=(openssh-client)
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
command -v nsenter >/dev/null 2>&1 || missing+=(util-linux)
command -v containerd >/dev/null 2>&1 || missing+=(containerd)
command -v runc >/dev/null 2>&1 || missing+=(runc)
[[ -x /usr/lib/cni/bridge ]] || missing+=(containernetworking-plugins)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
[[ -f /usr/lib/x86_64-linux-gnu/libc.a || -f /usr/lib/aarch64-linux-gnu/libc.a ]] || missing+=(libc6-dev)
if ((${#missing[@]} == 0)); then
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if [[ $(id -u) -ne 0 ]]; then
  echo "error: the tests need Debian packages ${missing[*]}; install them (as root: apt-get install ${missing[*]})" >&2
  exit 1
fi
echo "[system-packages] installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# The packages start nothing here (no systemd): sshd and containerd run only when a test or
# tools/realnode.py starts them, with their own configuration. openssh-server's postinst
# generates the host keys.
