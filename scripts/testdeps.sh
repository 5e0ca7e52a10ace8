#!/usr/bin/env bash
# Installs everything the test suite runs against: Debian packages, the npm
# MCP servers, conformance suite and reference encoders (testdeps/), and the
# container backends' world under .cache/testdeps/: podman (rootful, and
# rootless as the user codemode-rootless), a private dockerd, a static gVisor
# runsc, and the Python rootfs imported into every engine as an image (built
# with debootstrap; no registry needed). Every step checks first, so a second
# run takes a few seconds. internal/testenv reads what this script writes to
# .cache/testdeps/env.
#
# It also brings up the Kubernetes test cluster (scripts/kube-up.sh; built
# once into .cache/kube, about 10 minutes, then up in seconds).
#
# Sourced by test.sh, which then stops the dockerd and the cluster started
# here (DOCKERD_STARTED=1, KUBE_STARTED=1) when the tests end, and leaves
# them alone if they were running already; run on its own, it leaves both
# running for later test runs (stop them with: kill "$(cat
# .cache/testdeps/docker/dockerd.pid)" and scripts/kube-down.sh --stop).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

TESTDEPS="$ROOT/.cache/testdeps"
# gVisor is built from the Go module proxy, pinned: the proxy serves only
# pseudo-versions of the go branch, and newer snapshots may need sidecar
# binaries.
RUNSC_VERSION=v0.0.0-20260905035102-160fafc42237
TEST_IMAGE=localhost/codemode-python:test
# Podman on this machine class: crun fails on hybrid cgroups, so runc,
# explicitly (podman prefers crun when both are installed). Without systemd
# podman picks cgroupfs and the file events backend by itself. Containers
# also need explicit --ulimit nofile=…,nproc=… (CAP_SYS_RESOURCE is missing);
# those are run flags, which the tests and the backend pass.
PODMAN="podman --runtime runc"
# Rootless podman: an unprivileged user whose podman keeps its storage and
# runtime files under .cache/testdeps/rootless, reached through a wrapper
# that root's tests run (setpriv, with the user's HOME and runtime dir).
ROOTLESS_USER=codemode-rootless
ROOTLESS_DIR="$TESTDEPS/rootless"
ROOTLESS_PODMAN="$TESTDEPS/bin/podman-rootless"
DOCKER_SOCK="$TESTDEPS/docker/docker.sock"
# Debian's client, always: /usr/local/bin/docker may be a newer CLI.
DOCKER="/usr/bin/docker -H unix://$DOCKER_SOCK"
DOCKERD_PIDFILE="$TESTDEPS/docker/dockerd.pid"
DOCKERD_STARTED=${DOCKERD_STARTED:-0}
KUBE_STARTED=${KUBE_STARTED:-0}
KUBE_KUBECONFIG=""
# The names scripts/kube-up.sh imports the images under.
KUBE_IMAGE=localhost/codemode-python:test
KUBE_SERVER_IMAGE=localhost/codemode:test

# step NAME CMD...: runs CMD and logs how long it took.
step() {
	local name=$1 t0 t1
	shift
	t0=$(date +%s%N)
	"$@"
	t1=$(date +%s%N)
	log "$(printf '%s: %d.%03d s' "$name" $(((t1 - t0) / 1000000000)) $((((t1 - t0) / 1000000) % 1000)))"
}

install_packages() {
	ensure_runtime_deps
	ensure_go
	apt_install curl python3-pip python3-numpy python3-pandas python3-matplotlib python3-pil util-linux podman runc uidmap slirp4netns fuse-overlayfs debootstrap docker.io chromium
}

install_npm() {
	if ! command -v npm >/dev/null 2>&1; then
		apt_install nodejs npm
	fi
	if [ ! -f "$ROOT/testdeps/node_modules/.package-lock.json" ] || [ "$ROOT/testdeps/package.json" -nt "$ROOT/testdeps/node_modules/.package-lock.json" ]; then
		log "npm install (testdeps)"
		(cd "$ROOT/testdeps" && npm install --no-audit --no-fund --loglevel=error >/dev/null)
	fi
}

# build_runsc: static (the sandbox chroot has no ld.so for a cgo build).
build_runsc() {
	local bin="$TESTDEPS/bin/runsc"
	if [ -x "$bin" ] && [ "$(cat "$bin.version" 2>/dev/null)" = "$RUNSC_VERSION" ]; then return 0; fi
	log "building gVisor runsc $RUNSC_VERSION"
	mkdir -p "$TESTDEPS/bin"
	rm -f "$bin.version"
	(cd "$TESTDEPS" && CGO_ENABLED=0 GOBIN="$TESTDEPS/bin" go install -trimpath -ldflags='-s -w' "gvisor.dev/gvisor/runsc@$RUNSC_VERSION")
	echo "$RUNSC_VERSION" >"$bin.version"
}

build_codemode_for_testdeps() {
	(cd "$ROOT" && go build -trimpath -o "$TESTDEPS/bin/codemode" ./cmd/codemode)
}

# image_into ENGINE-CMD: builds the rootfs (once; cached by its inputs) and
# imports it into the engine (skipped when the engine has it already).
image_into() {
	"$TESTDEPS/bin/codemode" image build --engine-cmd "$1" --rootfs "$TESTDEPS/rootfs" --tag "$TEST_IMAGE" >/dev/null
}

# free_subid_start FILE: the first id after every range in /etc/subuid or
# /etc/subgid (at least 100000, where useradd starts).
free_subid_start() {
	awk -F: 'BEGIN { n = 100000 } NF == 3 && $2 + $3 > n { n = $2 + $3 } END { print n }' "$1"
}

# setup_rootless_user: the user, its subordinate id ranges (useradd adds
# them; a user made elsewhere may lack them), its directories, and the
# wrapper. Overlay storage, not podman's rootless default vfs, which copies
# the whole image for every container (seconds per session).
setup_rootless_user() {
	if ! id -u "$ROOTLESS_USER" >/dev/null 2>&1; then
		log "creating user $ROOTLESS_USER"
		as_root useradd --home-dir "$ROOTLESS_DIR/home" --no-create-home --shell /usr/sbin/nologin \
			--comment "codemode rootless podman tests" "$ROOTLESS_USER"
	fi
	local f start
	for f in /etc/subuid /etc/subgid; do
		grep -q "^$ROOTLESS_USER:" "$f" 2>/dev/null && continue
		start=$(free_subid_start "$f")
		log "adding $f range $start-$((start + 65535)) for $ROOTLESS_USER"
		if [ "$f" = /etc/subuid ]; then
			as_root usermod --add-subuids "$start-$((start + 65535))" "$ROOTLESS_USER"
		else
			as_root usermod --add-subgids "$start-$((start + 65535))" "$ROOTLESS_USER"
		fi
	done
	as_root install -d -m 0755 "$ROOTLESS_DIR"
	as_root install -d -m 0700 -o "$ROOTLESS_USER" -g "$ROOTLESS_USER" "$ROOTLESS_DIR/home" "$ROOTLESS_DIR/run"
	mkdir -p "$TESTDEPS/bin"
	cat >"$ROOTLESS_PODMAN.tmp" <<EOF
#!/bin/sh
# Written by scripts/testdeps.sh: podman as the unprivileged user $ROOTLESS_USER
# (run it as root). Nothing of the caller's environment passes through.
exec setpriv --reuid=$ROOTLESS_USER --regid=$ROOTLESS_USER --init-groups \\
	env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
	HOME=$ROOTLESS_DIR/home XDG_RUNTIME_DIR=$ROOTLESS_DIR/run \\
	podman --runtime runc --storage-driver overlay "\$@"
EOF
	chmod 0755 "$ROOTLESS_PODMAN.tmp"
	mv "$ROOTLESS_PODMAN.tmp" "$ROOTLESS_PODMAN"
}

dockerd_answers() {
	$DOCKER version --format '{{.Server.Version}}' >/dev/null 2>&1
}

# start_dockerd: a private dockerd (own socket, data and exec roots, no
# bridge or iptables rules), started by hand: there is no systemd.
start_dockerd() {
	local dir="$TESTDEPS/docker"
	if dockerd_answers; then return 0; fi
	mkdir -p "$dir"
	local pid
	pid=$(cat "$DOCKERD_PIDFILE" 2>/dev/null || true)
	if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
		rm -f "$DOCKERD_PIDFILE" "$DOCKER_SOCK"
		log "starting dockerd on $DOCKER_SOCK"
		setsid /usr/sbin/dockerd --data-root "$dir/data" --exec-root "$dir/exec" --pidfile "$DOCKERD_PIDFILE" \
			-H "unix://$DOCKER_SOCK" --bridge=none --iptables=false --ip-masq=false \
			--add-runtime "runsc=$TESTDEPS/bin/runsc" >"$dir/dockerd.log" 2>&1 </dev/null &
		DOCKERD_STARTED=1
	fi
	for _ in $(seq 300); do
		if dockerd_answers; then return 0; fi
		sleep 0.1
	done
	log "dockerd did not answer on $DOCKER_SOCK within 30 s; its log:"
	tail -n 30 "$dir/dockerd.log" >&2
	return 1
}

# stop_dockerd: SIGTERM by pidfile (dockerd stops its containers and its
# containerd), SIGKILL after 20 s.
stop_dockerd() {
	local pid
	pid=$(cat "$DOCKERD_PIDFILE" 2>/dev/null || true)
	[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 0
	log "stopping dockerd (pid $pid)"
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 200); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

# start_kube: scripts/kube-up.sh, which is idempotent; remembers whether
# the cluster was down before, for test.sh to stop it again.
start_kube() {
	local kubectl="$ROOT/.cache/kube/run/kubectl" kubeconfig="$ROOT/.cache/kube/run/admin.kubeconfig"
	if ! "$kubectl" --kubeconfig "$kubeconfig" --request-timeout 5s get --raw /readyz >/dev/null 2>&1; then
		KUBE_STARTED=1
	fi
	KUBE_KUBECONFIG=$(bash "$ROOT/scripts/kube-up.sh" | tail -n 1)
}

# stop_kube: the cluster's daemons and Pods; its state stays, so the next
# testdeps.sh brings the same cluster up in seconds.
stop_kube() {
	bash "$ROOT/scripts/kube-down.sh" --stop
}

write_env() {
	local tmp="$TESTDEPS/env.tmp"
	cat >"$tmp" <<EOF
# Written by scripts/testdeps.sh; read by internal/testenv. Values are split at spaces.
export CODEMODE_TEST_PODMAN='$PODMAN'
export CODEMODE_TEST_ROOTLESS_PODMAN='$ROOTLESS_PODMAN'
export CODEMODE_TEST_DOCKER='$DOCKER'
export CODEMODE_TEST_RUNSC='$TESTDEPS/bin/runsc'
export CODEMODE_TEST_IMAGE='$TEST_IMAGE'
export CODEMODE_TEST_ROOTFS='$TESTDEPS/rootfs'
export DOCKER_HOST='unix://$DOCKER_SOCK'
export CODEMODE_TEST_KUBECONFIG='$KUBE_KUBECONFIG'
export CODEMODE_TEST_KUBE_IMAGE='$KUBE_IMAGE'
export CODEMODE_TEST_KUBE_SERVER_IMAGE='$KUBE_SERVER_IMAGE'
EOF
	mv "$tmp" "$TESTDEPS/env"
}

case "$ROOT" in *" "* | *"'"*)
	log "the checkout path must not contain spaces or quotes: $ROOT"
	exit 1
	;;
esac
mkdir -p "$TESTDEPS"
step "apt packages" install_packages
step "npm packages" install_npm
step "runsc" build_runsc
step "codemode binary" build_codemode_for_testdeps
step "rootfs + podman image" image_into "$PODMAN"
step "rootless podman user" setup_rootless_user
step "rootless podman image" image_into "$ROOTLESS_PODMAN"
step "dockerd" start_dockerd
step "docker image" image_into "$DOCKER"
step "kubernetes cluster" start_kube
write_env
