# Shared by demo.sh and test.sh: install what codemode needs on a Debian
# machine. Every step checks first, so re-running is cheap.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export DEBIAN_FRONTEND=noninteractive
export CGO_ENABLED=0 # the sandbox init drops privileges on all threads, which needs a pure-Go build

log() { printf '==> %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

APT_UPDATED=0
apt_install() {
	local missing=()
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	log "apt-get install ${missing[*]}"
	if [ "$APT_UPDATED" -eq 0 ]; then
		as_root apt-get update -qq
		APT_UPDATED=1
	fi
	# Never let a package start its service (docker.io, containerd): a
	# policy-rc.d that says no, for the duration of the install only.
	local policy=/usr/sbin/policy-rc.d own_policy=0 rc=0
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' | as_root tee "$policy" >/dev/null
		as_root chmod 755 "$policy"
		own_policy=1
	fi
	as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
	if [ "$own_policy" -eq 1 ]; then as_root rm -f "$policy"; fi
	return "$rc"
}

# go_can_build GO: whether GO can build this module, itself or by fetching the
# toolchain go.mod names (Go 1.21 and later do, unless GOTOOLCHAIN=local).
go_can_build() {
	local v want major minor
	v=$("$1" env GOVERSION 2>/dev/null) || v=""
	v=${v#go}
	want=$(sed -n 's/^go \([0-9.]*\).*/\1/p' "$ROOT/go.mod")
	major=${v%%.*}
	minor=${v#*.}
	minor=${minor%%.*}
	if [ -z "$v" ] || ! [ "$major" -eq 1 ] 2>/dev/null || [ "$minor" -lt 21 ]; then
		log "$1 is Go ${v:-of unknown version}; this module needs Go $want (1.21 or later can fetch it)"
		return 1
	fi
	if [ "$(printf '%s\n%s\n' "$v" "$want" | sort -V | head -n1)" != "$want" ]; then
		if [ "$("$1" env GOTOOLCHAIN)" = local ]; then
			log "$1 is Go $v with GOTOOLCHAIN=local; this module needs Go $want"
			return 1
		fi
		log "$1 is Go $v; it fetches Go $want from the module proxy for this module"
	fi
	return 0
}

# ensure_go puts a Go able to build this module on PATH. Debian 12's own Go is
# too old; bookworm-backports has 1.23, which fetches the toolchain go.mod asks
# for from the Go module proxy (GOTOOLCHAIN=auto).
ensure_go() {
	local g
	for g in "$(command -v go 2>/dev/null)" /usr/local/go/bin/go /usr/lib/go-1.2*/bin/go; do
		if [ -n "$g" ] && [ -x "$g" ] && go_can_build "$g"; then
			export PATH="$(dirname "$g"):$PATH"
			return 0
		fi
	done
	log "installing Go from bookworm-backports"
	if ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d/; then
		echo "deb http://deb.debian.org/debian bookworm-backports main" | as_root tee /etc/apt/sources.list.d/codemode-backports.list >/dev/null
		APT_UPDATED=0
	fi
	apt_install golang-1.23-go ca-certificates
	export PATH="/usr/lib/go-1.23/bin:$PATH"
	export GOTOOLCHAIN=auto
}

# The data packages make `import numpy, pandas, matplotlib` work in the
# native backend's sessions, which use the host's /usr.
ensure_runtime_deps() {
	apt_install python3 ca-certificates python3-numpy python3-pandas python3-matplotlib python3-pil
}

build_codemode() {
	ensure_go
	log "building bin/codemode"
	(cd "$ROOT" && go build -trimpath -o bin/codemode ./cmd/codemode)
}
