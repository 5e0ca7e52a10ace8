#!/usr/bin/env bash
# Brings up a real single-node Kubernetes on this machine, for the tests
# (internal/testenv.Cluster) and for trying deploy/kubernetes. Prints the
# admin kubeconfig's path as the last line of stdout; the cluster's kubectl
# is next to it. Idempotent: running it again starts what is not running.
#
# Everything is built from the Go module proxy and Debian, since no registry
# or download site is reachable: Kubernetes and etcd (scripts/kube/build.sh,
# cached under .cache/kube/<versions-hash>/), kube-router for NetworkPolicy
# (firewall only), Debian's containerd, runc and CNI plugins (bridge,
# host-local, loopback, portmap). A private containerd (own socket, root and
# state) runs the Pods; the images (pause, the Python sandbox image and a
# codemode server image) are built by `codemode image` and imported into
# its k8s.io namespace. All state lives under .cache/kube/run, which
# scripts/kube-down.sh removes with the processes, mounts and iptables rules.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
source "$ROOT/scripts/kube/build.sh"

KUBE_DIR="$ROOT/.cache/kube"
KUBE_RUN="$KUBE_DIR/run"
PKI="$KUBE_RUN/pki"
LOGS="$KUBE_RUN/logs"
PIDS="$KUBE_RUN/pids"
CONTAINERD_DIR="$KUBE_RUN/containerd"
CONTAINERD_SOCK="$CONTAINERD_DIR/containerd.sock"
CNI_CONF_DIR="$KUBE_RUN/cni/net.d"
KUBELET_DIR="$KUBE_RUN/kubelet"
KUBECONFIG_ADMIN="$KUBE_RUN/admin.kubeconfig"
KUBECTL="$KUBE_RUN/kubectl"
CTR="ctr --address $CONTAINERD_SOCK --namespace k8s.io"

KUBE_NODE=codemode-kube
CLUSTER_CIDR=10.244.0.0/16
NODE_POD_CIDR=10.244.0.0/24
SERVICE_CIDR=10.96.0.0/16
API_SERVICE_IP=10.96.0.1
API_PORT=6443
ETCD_CLIENT=127.0.0.1:23379
ETCD_PEER=127.0.0.1:23380
CNI_BRIDGE=cmkube0
# Images, under the names deploy/kubernetes and the tests use.
PAUSE_IMAGE=localhost/codemode-pause:test
SANDBOX_IMAGE=localhost/codemode-python:test
SERVER_IMAGE=localhost/codemode:test
SANDBOX_ROOTFS=${SANDBOX_ROOTFS:-$ROOT/.cache/testdeps/rootfs}

# node_ip: the address of the interface the default route leaves by.
node_ip() {
	local ip
	ip=$(ip -4 route get 1.1.1.1 2>/dev/null | sed -n 's/.* src \([0-9.]*\).*/\1/p')
	[ -n "$ip" ] || ip=$(ip -4 -o addr show scope global | awk '{split($4, a, "/"); print a[1]; exit}')
	echo "$ip"
}
NODE_IP=$(node_ip)

install_node_packages() {
	apt_install containerd runc containernetworking-plugins iptables ipset conntrack openssl curl
}

# --- PKI -------------------------------------------------------------------

# issue NAME SUBJECT EXTENSIONS: a P-256 key and a certificate signed by the
# cluster CA, unless both exist.
issue() {
	local name=$1 subject=$2 ext=$3
	[ -s "$PKI/$name.crt" ] && [ -s "$PKI/$name.key" ] && return 0
	openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/$name.key" 2>/dev/null
	openssl req -new -key "$PKI/$name.key" -subj "$subject" -out "$PKI/$name.csr"
	printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n%s\n' "$ext" >"$PKI/$name.ext"
	openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -set_serial "0x$(openssl rand -hex 16)" \
		-days 3650 -extfile "$PKI/$name.ext" -out "$PKI/$name.crt" 2>/dev/null
	rm -f "$PKI/$name.csr" "$PKI/$name.ext"
}

# kubeconfig FILE CERT-NAME SERVER: a kubeconfig with everything embedded.
kubeconfig() {
	local file=$1 name=$2 server=$3
	cat >"$file.tmp" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: codemode-kube
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 "$PKI/ca.crt")
users:
- name: $name
  user:
    client-certificate-data: $(base64 -w0 "$PKI/$name.crt")
    client-key-data: $(base64 -w0 "$PKI/$name.key")
contexts:
- name: codemode-kube
  context:
    cluster: codemode-kube
    user: $name
current-context: codemode-kube
EOF
	chmod 0600 "$file.tmp"
	mv "$file.tmp" "$file"
}

make_pki() {
	mkdir -p "$PKI"
	chmod 0700 "$PKI"
	if [ ! -s "$PKI/ca.crt" ]; then
		openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$PKI/ca.key" 2>/dev/null
		openssl req -x509 -new -key "$PKI/ca.key" -subj /CN=codemode-kube-ca -days 3650 \
			-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -out "$PKI/ca.crt"
	fi
	if [ ! -s "$PKI/sa.key" ]; then
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$PKI/sa.key" 2>/dev/null
		openssl pkey -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub"
	fi
	issue apiserver /CN=kube-apiserver "extendedKeyUsage=serverAuth
subjectAltName=IP:$API_SERVICE_IP,IP:$NODE_IP,IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
	issue kubelet-serving "/CN=system:node:$KUBE_NODE" "extendedKeyUsage=serverAuth
subjectAltName=IP:$NODE_IP,IP:127.0.0.1,DNS:$KUBE_NODE,DNS:localhost"
	issue admin /O=system:masters/CN=kubernetes-admin extendedKeyUsage=clientAuth
	issue apiserver-kubelet-client /O=system:masters/CN=kube-apiserver-kubelet-client extendedKeyUsage=clientAuth
	issue controller-manager /CN=system:kube-controller-manager extendedKeyUsage=clientAuth
	issue scheduler /CN=system:kube-scheduler extendedKeyUsage=clientAuth
	issue kubelet "/O=system:nodes/CN=system:node:$KUBE_NODE" extendedKeyUsage=clientAuth
	issue kube-proxy /CN=system:kube-proxy extendedKeyUsage=clientAuth
	issue kube-router /CN=codemode:kube-router extendedKeyUsage=clientAuth
	local local_api="https://127.0.0.1:$API_PORT"
	kubeconfig "$KUBE_RUN/controller-manager.kubeconfig" controller-manager "$local_api"
	kubeconfig "$KUBE_RUN/scheduler.kubeconfig" scheduler "$local_api"
	kubeconfig "$KUBE_RUN/kubelet.kubeconfig" kubelet "$local_api"
	kubeconfig "$KUBE_RUN/kube-proxy.kubeconfig" kube-proxy "$local_api"
	kubeconfig "$KUBE_RUN/kube-router.kubeconfig" kube-router "$local_api"
	kubeconfig "$KUBECONFIG_ADMIN" admin "https://$NODE_IP:$API_PORT"
}

# --- processes -------------------------------------------------------------

# running NAME: whether the daemon NAME runs, from the binary it was started
# with (a rebuilt binary means a restart).
running() {
	local pid exe
	pid=$(cat "$PIDS/$1.pid" 2>/dev/null) || return 1
	exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || return 1
	[ "$exe" = "$(cat "$PIDS/$1.exe" 2>/dev/null)" ]
}

# stop NAME: SIGTERM, then SIGKILL after 15 s.
stop() {
	local pid
	pid=$(cat "$PIDS/$1.pid" 2>/dev/null) || return 0
	if kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		for _ in $(seq 150); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$PIDS/$1.pid" "$PIDS/$1.exe"
}

# start NAME BINARY ARGS...: runs the daemon in its own session, logging to
# logs/NAME.log, unless it runs already.
start() {
	local name=$1 bin=$2
	shift 2
	if running "$name"; then return 0; fi
	stop "$name"
	log "starting $name"
	mkdir -p "$LOGS" "$PIDS"
	setsid nohup "$bin" "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
	echo $! >"$PIDS/$name.pid"
	readlink -f "$bin" >"$PIDS/$name.exe"
}

# wait_for WHAT SECONDS CMD...: polls CMD every half second.
wait_for() {
	local what=$1 seconds=$2 log_name=$3
	shift 3
	for _ in $(seq $((seconds * 2))); do
		if "$@" >/dev/null 2>&1; then return 0; fi
		sleep 0.5
	done
	log "$what not ready within $seconds s; the end of $LOGS/$log_name.log:"
	tail -n 40 "$LOGS/$log_name.log" >&2 || true
	return 1
}

kubectl_admin() { "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# --- containerd --------------------------------------------------------------

write_containerd_config() {
	mkdir -p "$CONTAINERD_DIR" "$CNI_CONF_DIR" "$KUBE_RUN/cni/ipam"
	cat >"$CONTAINERD_DIR/config.toml" <<EOF
# Written by scripts/kube-up.sh: a containerd of its own for the test cluster.
version = 2
root = "$CONTAINERD_DIR/root"
state = "$CONTAINERD_DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.devmapper"]
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$CONTAINERD_SOCK.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$CONTAINERD_DIR/opt"
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
  # No CAP_SYS_RESOURCE here: never ask runc for an oom_score_adj below containerd's own.
  restrict_oom_score_adj = true
  # Pod network namespaces under the state directory, not /var/run/netns.
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        Root = "$CONTAINERD_DIR/runc"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$CNI_CONF_DIR"
EOF
	# One bridge with a static range (the controller-manager gives the node
	# the same one) and no masquerading of its own: kube-up.sh adds one rule
	# in a chain of its own, which kube-down.sh removes.
	cat >"$CNI_CONF_DIR/10-codemode-kube.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "codemode-kube",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$CNI_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$KUBE_RUN/cni/ipam",
        "ranges": [[{"subnet": "$NODE_POD_CIDR"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
}

start_containerd() {
	write_containerd_config
	start containerd /usr/bin/containerd --config "$CONTAINERD_DIR/config.toml"
	wait_for containerd 30 containerd $CTR version
}

# masquerade: Pod traffic leaving the Pod network, in a chain kube-down.sh
# deletes whole.
masquerade() {
	iptables -t nat -N CODEMODE-KUBE-MASQ 2>/dev/null || true
	iptables -t nat -C POSTROUTING -j CODEMODE-KUBE-MASQ 2>/dev/null || iptables -t nat -A POSTROUTING -j CODEMODE-KUBE-MASQ
	iptables -t nat -C CODEMODE-KUBE-MASQ -s "$CLUSTER_CIDR" ! -d "$CLUSTER_CIDR" -j MASQUERADE 2>/dev/null ||
		iptables -t nat -A CODEMODE-KUBE-MASQ -s "$CLUSTER_CIDR" ! -d "$CLUSTER_CIDR" -j MASQUERADE
}

# --- images ----------------------------------------------------------------

build_codemode_for_kube() {
	(cd "$ROOT" && go build -trimpath -o "$KUBE_RUN/codemode" ./cmd/codemode)
}

import_images() {
	local engine="$CTR"
	"$KUBE_RUN/codemode" image binary --binary "$KUBE_BIN/pause" --tag "$PAUSE_IMAGE" --engine-cmd "$engine" >/dev/null
	"$KUBE_RUN/codemode" image server --tag "$SERVER_IMAGE" --engine-cmd "$engine" >/dev/null
	"$KUBE_RUN/codemode" image build --rootfs "$SANDBOX_ROOTFS" --tag "$SANDBOX_IMAGE" --engine-cmd "$engine" >/dev/null
}

# --- control plane ---------------------------------------------------------

start_etcd() {
	start etcd "$KUBE_BIN/etcd" --name codemode-kube --data-dir "$KUBE_RUN/etcd" \
		--listen-client-urls "http://$ETCD_CLIENT" --advertise-client-urls "http://$ETCD_CLIENT" \
		--listen-peer-urls "http://$ETCD_PEER" --initial-advertise-peer-urls "http://$ETCD_PEER" \
		--initial-cluster "codemode-kube=http://$ETCD_PEER" --listen-metrics-urls "" \
		--quota-backend-bytes 2147483648 --log-level warn
	wait_for etcd 30 etcd curl -fsS "http://$ETCD_CLIENT/health"
}

start_apiserver() {
	start kube-apiserver "$KUBE_BIN/kube-apiserver" \
		--etcd-servers "http://$ETCD_CLIENT" \
		--bind-address 0.0.0.0 --secure-port "$API_PORT" --advertise-address "$NODE_IP" \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--client-ca-file "$PKI/ca.crt" \
		--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
		--kubelet-certificate-authority "$PKI/ca.crt" --kubelet-preferred-address-types InternalIP \
		--service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key" \
		--service-account-issuer https://kubernetes.default.svc.cluster.local \
		--service-cluster-ip-range "$SERVICE_CIDR" --service-node-port-range 30000-32767 \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
		--allow-privileged=true --profiling=false --endpoint-reconciler-type lease
	wait_for kube-apiserver 120 kube-apiserver kubectl_admin get --raw /readyz
}

start_controller_manager() {
	start kube-controller-manager "$KUBE_BIN/kube-controller-manager" \
		--kubeconfig "$KUBE_RUN/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$KUBE_RUN/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$KUBE_RUN/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --use-service-account-credentials=true \
		--service-account-private-key-file "$PKI/sa.key" --root-ca-file "$PKI/ca.crt" \
		--cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
		--allocate-node-cidrs=true --cluster-cidr "$CLUSTER_CIDR" --node-cidr-mask-size 24 \
		--service-cluster-ip-range "$SERVICE_CIDR" --profiling=false
}

start_scheduler() {
	start kube-scheduler "$KUBE_BIN/kube-scheduler" \
		--kubeconfig "$KUBE_RUN/scheduler.kubeconfig" \
		--authentication-kubeconfig "$KUBE_RUN/scheduler.kubeconfig" \
		--authorization-kubeconfig "$KUBE_RUN/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --leader-elect=false --profiling=false
}

# apply_bootstrap: RBAC for kube-router (Pods, Namespaces, NetworkPolicies,
# Nodes; read only).
apply_bootstrap() {
	kubectl_admin apply -f - >/dev/null <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: codemode:kube-router
rules:
- apiGroups: [""]
  resources: [namespaces, pods, services, nodes, endpoints]
  verbs: [get, list, watch]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [get, list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch, update]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: codemode:kube-router
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: codemode:kube-router
subjects:
- apiGroup: rbac.authorization.k8s.io
  kind: User
  name: codemode:kube-router
EOF
}

# --- node ------------------------------------------------------------------

start_kubelet() {
	mkdir -p "$KUBELET_DIR" "$KUBE_RUN/pod-logs"
	cat >"$KUBE_RUN/kubelet.yaml" <<EOF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: "$PKI/ca.crt"}
authorization: {mode: Webhook}
tlsCertFile: "$PKI/kubelet-serving.crt"
tlsPrivateKeyFile: "$PKI/kubelet-serving.key"
containerRuntimeEndpoint: "unix://$CONTAINERD_SOCK"
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
readOnlyPort: 0
address: "$NODE_IP"
healthzBindAddress: 127.0.0.1
clusterDomain: cluster.local
resolvConf: /etc/resolv.conf
podLogsDir: "$KUBE_RUN/pod-logs"
# No CAP_SYS_RESOURCE: the kubelet keeps the oom_score_adj it was started with.
oomScoreAdj: 0
# The images are imported, never pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
serializeImagePulls: false
# Every Pod gets its own process budget (a pids cgroup), so one session's
# fork bomb cannot take the node's: codemode's per-uid RLIMIT_NPROC alone
# is shared by every sandbox on the node.
podPidsLimit: 1024
EOF
	start kubelet "$KUBE_BIN/kubelet" --config "$KUBE_RUN/kubelet.yaml" \
		--kubeconfig "$KUBE_RUN/kubelet.kubeconfig" --root-dir "$KUBELET_DIR" \
		--hostname-override "$KUBE_NODE" --node-ip "$NODE_IP"
}

start_kube_proxy() {
	cat >"$KUBE_RUN/kube-proxy.yaml" <<EOF
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection: {kubeconfig: "$KUBE_RUN/kube-proxy.kubeconfig"}
mode: iptables
clusterCIDR: "$CLUSTER_CIDR"
hostnameOverride: "$KUBE_NODE"
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
oomScoreAdj: 0
# Leave the host's conntrack settings and route_localnet alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
EOF
	start kube-proxy "$KUBE_BIN/kube-proxy" --config "$KUBE_RUN/kube-proxy.yaml"
}

start_kube_router() {
	start kube-router "$KUBE_BIN/kube-router" --kubeconfig "$KUBE_RUN/kube-router.kubeconfig" \
		--run-firewall=true --run-router=false --run-service-proxy=false --enable-cni=false \
		--hostname-override "$KUBE_NODE" --service-cluster-ip-range "$SERVICE_CIDR" \
		--metrics-port 0 --health-port 20244
}

# check_api_port: the ports, node name, bridge and iptables chains are fixed,
# so there is one test cluster per machine; refuse to start a second one
# (another checkout's) instead of fighting over them.
check_api_port() {
	running kube-apiserver && return 0
	local holder
	holder=$(ss -ltnpH "sport = :$API_PORT" 2>/dev/null | sed -n 's/.*pid=\([0-9]*\).*/\1/p' | head -n 1)
	[ -z "$holder" ] && return 0
	log "port $API_PORT is held by pid $holder ($(readlink "/proc/$holder/exe" 2>/dev/null)), not by this checkout's cluster;"
	log "there is one test cluster per machine: stop the other with its scripts/kube-down.sh"
	exit 1
}

kube_router_healthy() { curl -sf -o /dev/null http://127.0.0.1:20244/healthz; }

node_ready() {
	[ "$(kubectl_admin get node "$KUBE_NODE" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]
}

# default_service_account: Pods in default cannot be created before the
# controller-manager has made its ServiceAccount.
default_service_account() { kubectl_admin -n default get serviceaccount default; }

up() {
	case "$ROOT" in *" "* | *"'"*)
		log "the checkout path must not contain spaces or quotes: $ROOT"
		exit 1
		;;
	esac
	[ -n "$NODE_IP" ] || {
		log "no IPv4 address with a default route: the node needs one"
		exit 1
	}
	install_node_packages
	check_api_port
	ensure_go
	ensure_kube_binaries
	mkdir -p "$KUBE_RUN" "$LOGS" "$PIDS"
	install -m 0755 "$KUBE_BIN/kubectl" "$KUBECTL.tmp" && mv "$KUBECTL.tmp" "$KUBECTL"
	make_pki
	build_codemode_for_kube
	start_containerd
	import_images
	masquerade
	start_etcd
	start_apiserver
	apply_bootstrap
	start_controller_manager
	start_scheduler
	start_kubelet
	start_kube_proxy
	wait_for "node $KUBE_NODE" 120 kubelet node_ready
	# kube-router finds its node by name at start, and exits if the kubelet
	# has not registered it yet.
	start_kube_router
	wait_for "kube-router" 60 kube-router kube_router_healthy
	wait_for "default ServiceAccount" 60 kube-controller-manager default_service_account
	cat >"$KUBE_RUN/cluster.env" <<EOF
# Written by scripts/kube-up.sh.
KUBECONFIG='$KUBECONFIG_ADMIN'
KUBECTL='$KUBECTL'
KUBE_VERSION='$KUBE_VERSION'
KUBE_NODE='$KUBE_NODE'
NODE_IP='$NODE_IP'
CLUSTER_CIDR='$CLUSTER_CIDR'
SERVICE_CIDR='$SERVICE_CIDR'
PAUSE_IMAGE='$PAUSE_IMAGE'
SANDBOX_IMAGE='$SANDBOX_IMAGE'
SERVER_IMAGE='$SERVER_IMAGE'
CONTAINERD_SOCK='$CONTAINERD_SOCK'
EOF
	log "cluster up: node $KUBE_NODE ($NODE_IP), Kubernetes $KUBE_VERSION, logs in $LOGS"
	echo "$KUBECONFIG_ADMIN"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	up
fi
