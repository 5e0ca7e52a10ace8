# shellcheck shell=bash
# Sourced by kube-up.sh: builds the cluster's binaries from the Go module
# proxy into a directory keyed by the pinned versions and this recipe, so a
# second run finds them and skips the build.
KUBE_VERSION=v1.33.13
# kube-router: the NetworkPolicy controller (firewall only; kube-proxy serves
# Services and the bridge CNI plugin wires Pods).
KUBE_ROUTER_VERSION=v2.1.0
KUBE_SRC="$ROOT/scripts/kube"

# kube_build_key: the versions and a hash of everything the build reads.
kube_build_key() {
	local h
	h=$( (
		cd "$KUBE_SRC" || exit
		cat go.mod go.sum etcd/main.go pause/main.go
		echo "$KUBE_ROUTER_VERSION"
		declare -f kube_ldflags build_kube build_kube_router
	) | sha256sum | cut -c1-12)
	echo "$KUBE_VERSION-$h"
}

kube_ldflags() {
	local v=${KUBE_VERSION#v} p
	local major=${v%%.*} minor=${v#*.}
	minor=${minor%%.*}
	local flags="-s -w"
	for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags="$flags -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
	done
	echo "$flags"
}

# build_kube OUT: the Kubernetes commands, etcd and pause, static.
build_kube() {
	local out=$1
	mkdir -p "$out"
	(cd "$KUBE_SRC" && CGO_ENABLED=0 go build -trimpath -ldflags "$(kube_ldflags)" -o "$out/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
		k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kubelet \
		k8s.io/kubernetes/cmd/kube-proxy k8s.io/kubernetes/cmd/kubectl ./etcd ./pause)
}

# build_kube_router OUT: kube-router has no replace directives, so go install works.
build_kube_router() {
	local out=$1
	(cd "$KUBE_SRC" && CGO_ENABLED=0 GOBIN="$out" go install -trimpath -ldflags '-s -w' \
		"github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION")
}

# ensure_kube_binaries: sets KUBE_BIN to the cached build, building it first
# when missing. A build goes to a temporary directory, renamed when complete.
ensure_kube_binaries() {
	KUBE_BIN="$ROOT/.cache/kube/$(kube_build_key)"
	[ -f "$KUBE_BIN/.complete" ] && return 0
	ensure_go
	log "building Kubernetes $KUBE_VERSION and kube-router $KUBE_ROUTER_VERSION into $KUBE_BIN (about 8 minutes on 2 cores)"
	local tmp="$KUBE_BIN.tmp"
	rm -rf "$tmp"
	build_kube "$tmp"
	build_kube_router "$tmp"
	touch "$tmp/.complete"
	rm -rf "$KUBE_BIN"
	mv "$tmp" "$KUBE_BIN"
}
