#!/usr/bin/env bash
# Removes the test cluster scripts/kube-up.sh brought up: its daemons, the
# Pods' processes, its mounts, the iptables rules, chains and ipsets it and
# its components added, the Pod bridge, the kubelet's cgroups and its state
# directory (.cache/kube/run). The cached builds (.cache/kube/<key>) stay.
#
# With --stop it keeps the state directory (PKI, etcd data, imported
# images), so the next kube-up.sh starts the same cluster in seconds; the
# Pods' containers are stopped either way and the kubelet recreates them.
source "$(dirname "${BASH_SOURCE[0]}")/kube-up.sh"

KEEP_STATE=0
case "${1:-}" in
--stop) KEEP_STATE=1 ;;
"") ;;
*)
	log "usage: scripts/kube-down.sh [--stop]"
	exit 2
	;;
esac

# kill_pod_processes: whatever still runs in the kubelet's cgroups (Pods'
# containers), by the ids listed there.
kill_pod_processes() {
	local procs pid
	for _ in 1 2 3; do
		procs=$(find /sys/fs/cgroup/*/kubepods -name cgroup.procs -exec cat {} + 2>/dev/null | sort -u)
		[ -n "$procs" ] || return 0
		for pid in $procs; do kill -KILL "$pid" 2>/dev/null || true; done
		sleep 0.5
	done
}

# stop_containers: every task and container of the private containerd
# (runc's kill by id; the shims then exit).
stop_containers() {
	[ -S "$CONTAINERD_SOCK" ] && running containerd || return 0
	local c
	for c in $($CTR tasks ls -q 2>/dev/null); do
		$CTR tasks kill --signal SIGKILL "$c" >/dev/null 2>&1 || true
	done
	sleep 1
	for c in $($CTR tasks ls -q 2>/dev/null); do
		$CTR tasks delete --force "$c" >/dev/null 2>&1 || true
	done
	for c in $($CTR containers ls -q 2>/dev/null); do
		$CTR containers delete "$c" >/dev/null 2>&1 || true
	done
}

# kill_shims: runc shims of the private containerd that outlived it (they
# name its socket on their command line).
kill_shims() {
	local p
	for p in /proc/[0-9]*; do
		if tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q -- "containerd-shim-runc-v2 .*-address $CONTAINERD_SOCK\( \|\$\)"; then
			kill -KILL "${p#/proc/}" 2>/dev/null || true
		fi
	done
}

# unmount_state: every mount under the state directory (Pod volumes, the
# containers' root filesystems, network namespaces), deepest first.
unmount_state() {
	local m
	awk -v dir="$(readlink -f "$KUBE_RUN")/" 'index($5, dir) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
	done || true
}

# delete_chains TABLE PATTERN: deletes the rules that jump to chains named
# PATTERN (an extended regex), then the chains.
delete_chains() {
	local table=$1 pattern=$2 rule chain
	iptables -t "$table" -S 2>/dev/null | grep -E -- "^-A .* -j ($pattern)( |\$)" | while read -r rule; do
		eval "iptables -t $table ${rule/-A/-D}" 2>/dev/null || true
	done || true
	for chain in $(iptables -t "$table" -S 2>/dev/null | sed -n 's/^-N //p' | grep -E "^($pattern)\$"); do
		iptables -t "$table" -F "$chain" 2>/dev/null || true
	done
	for chain in $(iptables -t "$table" -S 2>/dev/null | sed -n 's/^-N //p' | grep -E "^($pattern)\$"); do
		iptables -t "$table" -X "$chain" 2>/dev/null || true
	done
}

# clean_network: kube-proxy's and kube-router's own cleanup, then whatever
# KUBE-* chains remain (kube-proxy, kube-router, the kubelet), kube-up.sh's
# masquerade chain, kube-router's ipsets and the Pod bridge.
clean_network() {
	if [ -x "$KUBE_BIN/kube-proxy" ]; then
		"$KUBE_BIN/kube-proxy" --cleanup --proxy-mode iptables >"$LOGS/kube-proxy-cleanup.log" 2>&1 || true
	fi
	local table set
	for table in filter nat mangle raw; do
		delete_chains "$table" 'KUBE-[A-Z0-9-]+|CODEMODE-KUBE-[A-Z-]+'
	done
	for set in $(ipset list -n 2>/dev/null | grep -E '^(KUBE-|kube-router-|inet6:KUBE-|inet6:kube-router-)'); do
		ipset destroy "$set" 2>/dev/null || true
	done
	ip link delete "$CNI_BRIDGE" 2>/dev/null || true
}

# remove_cgroups: the kubelet's cgroup trees, deepest first.
remove_cgroups() {
	local d
	for d in /sys/fs/cgroup/*/kubepods; do
		[ -d "$d" ] || continue
		find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
	done
}

down() {
	local bin
	KUBE_BIN="$KUBE_DIR/$(kube_build_key)"
	for bin in kube-router kube-proxy kubelet kube-scheduler kube-controller-manager kube-apiserver etcd; do
		stop "$bin"
	done
	stop_containers
	kill_pod_processes
	stop containerd
	kill_shims
	unmount_state
	clean_network
	remove_cgroups
	# Every Pod is gone, so are its addresses.
	rm -rf "$KUBE_RUN/cni/ipam"
	find /var/log/containers -maxdepth 1 -type l -lname "$(readlink -f "$KUBE_RUN")/*" -delete 2>/dev/null || true
	if [ "$KEEP_STATE" = 0 ]; then
		rm -rf "$KUBE_RUN"
		log "test cluster removed"
	else
		log "test cluster stopped; $KUBE_RUN kept for the next scripts/kube-up.sh"
	fi
}

down
