// Package kubernetes runs each sandbox as a Pod, through the Kubernetes API
// (client-go), behind the same sandbox.Backend contract as the other
// backends, and implements sandbox.Reattacher: a session outlives the
// codemode replica that started it, and any replica can take it over.
//
// The Pod's command is the keeper (keeper.py), which starts the session's
// command as its child and serves one connection at a time on a Unix
// socket in a private emptyDir. A connection is an exec of the connector
// (connector.py), which bridges the exec's stdio to that socket: the frames
// of the wire protocol flow unchanged, wrapped in the keeper's own frames
// (so that a connection cut mid-frame writes nothing half to the command,
// and so that stdin's end is not confused with a lost connection).
//
// Pods are hardened by their spec (non-root 65534, read-only root, no
// capabilities, no privilege escalation, seccomp, no service account token,
// no host namespaces, memory/CPU/ephemeral-storage limits, tmpfs emptyDirs
// sized by the limits) and isolated by a deny-all NetworkPolicy over every
// managed Pod of the namespace.
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/codemode/codemode/internal/sandbox"
)

// Name is the backend's name.
const Name = "kubernetes"

// Options configure a Backend.
type Options struct {
	// Kubeconfig is a kubeconfig file; "" means the in-cluster config when
	// running in a Pod, else the usual rules ($KUBECONFIG, ~/.kube/config).
	Kubeconfig string
	// Namespace of the sandbox Pods; "" means the kubeconfig's (or the
	// service account's) namespace.
	Namespace string
	// Image holds python3; it must be on the nodes or pullable by them.
	Image string
	// RuntimeClass, e.g. "gvisor"; "" means the cluster's default.
	RuntimeClass string
	// NodeSelector restricts the nodes sandbox Pods run on.
	NodeSelector map[string]string
	// SeccompProfile is a Localhost seccomp profile (relative to the
	// kubelet's seccomp directory) to use instead of RuntimeDefault.
	SeccompProfile string
	// IdleExpiry: a Pod no connection has used for this long is removed by
	// any replica's janitor (default 1h).
	IdleExpiry time.Duration
	// JanitorEvery is how often the janitor runs (default 1m); negative
	// disables it.
	JanitorEvery time.Duration
	// Environ is the process environment (POD_NAME, POD_NAMESPACE and
	// KUBECONFIG are read from it).
	Environ []string
	Logger  *slog.Logger
}

// IdleExpiry is how long a Pod no connection uses lives on.
func (b *Backend) IdleExpiry() time.Duration { return b.opts.IdleExpiry }

// Backend runs sandboxes as Kubernetes Pods.
type Backend struct {
	opts Options
	log  *slog.Logger

	mu        sync.Mutex
	client    *client // resolved lazily, by Probe or Start
	policyOK  bool    // the NetworkPolicy is in place
	janitorOn bool
	owner     *sandbox.Owner
	stop      chan struct{}
	stopped   chan struct{}
}

var (
	_ sandbox.Backend    = (*Backend)(nil)
	_ sandbox.Reattacher = (*Backend)(nil)
	_ sandbox.Diagnoser  = (*Backend)(nil)
)

// client is a connection to one cluster.
type client struct {
	cfg       *rest.Config
	http      *http.Client
	cs        kubernetes.Interface
	namespace string
	replica   replica
	inCluster bool
}

// New returns a Kubernetes backend; nothing is contacted until Probe or Start.
func New(opts Options) *Backend {
	if opts.IdleExpiry <= 0 {
		opts.IdleExpiry = time.Hour
	}
	if opts.JanitorEvery == 0 {
		opts.JanitorEvery = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Backend{opts: opts, log: opts.Logger, stop: make(chan struct{}), stopped: make(chan struct{})}
}

// Name implements sandbox.Backend.
func (b *Backend) Name() string { return Name }

func (b *Backend) env(name string) string {
	for i := len(b.opts.Environ) - 1; i >= 0; i-- {
		if k, v, ok := cutEnv(b.opts.Environ[i]); ok && k == name {
			return v
		}
	}
	return ""
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return "", "", false
}

// connect resolves the cluster once.
func (b *Backend) connect() (*client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.client != nil {
		return b.client, nil
	}
	c := &client{}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kc := b.env("KUBECONFIG"); kc != "" {
		rules.Precedence = filepathList(kc)
	}
	if b.opts.Kubeconfig != "" {
		rules.ExplicitPath = b.opts.Kubeconfig
	}
	loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
	var err error
	if b.opts.Kubeconfig == "" {
		if c.cfg, err = rest.InClusterConfig(); err == nil {
			c.inCluster = true
		}
	}
	if c.cfg == nil {
		if c.cfg, err = loader.ClientConfig(); err != nil {
			return nil, fmt.Errorf("kubernetes: loading the client config: %w", err)
		}
	}
	c.cfg = rest.CopyConfig(c.cfg)
	c.cfg.UserAgent = "codemode"
	// Sessions open several streams each; the client's default of 5 QPS
	// would queue Pod starts behind one another.
	c.cfg.QPS, c.cfg.Burst = 50, 100
	c.namespace = b.opts.Namespace
	if c.namespace == "" {
		ns, _, err := loader.Namespace()
		if err != nil || ns == "" {
			ns = "default"
		}
		if c.inCluster {
			if data, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil && len(data) > 0 {
				ns = string(data)
			}
		}
		c.namespace = ns
	}
	if c.http, err = rest.HTTPClientFor(c.cfg); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if c.cs, err = kubernetes.NewForConfigAndClient(c.cfg, c.http); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	if name := b.env("POD_NAME"); name != "" {
		c.replica = replica{ID: name, Kind: "pod", Namespace: b.env("POD_NAMESPACE")}
		if c.replica.Namespace == "" {
			c.replica.Namespace = c.namespace
		}
	} else {
		host, _ := os.Hostname()
		owner, err := sandbox.ClaimOwner()
		if err != nil {
			return nil, fmt.Errorf("kubernetes: %w", err)
		}
		b.owner = owner
		c.replica = replica{ID: host, Kind: "host", Owner: sandbox.OwnerID(os.Getpid())}
	}
	b.client = c
	return c, nil
}

func filepathList(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == os.PathListSeparator {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

// ensurePolicy creates or updates the deny-all NetworkPolicy, once per
// Backend (and again after a failure).
func (b *Backend) ensurePolicy(ctx context.Context, c *client) error {
	b.mu.Lock()
	done := b.policyOK
	b.mu.Unlock()
	if done {
		return nil
	}
	want := denyAll(c.namespace)
	api := c.cs.NetworkingV1().NetworkPolicies(c.namespace)
	cur, err := api.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating NetworkPolicy %s: %w", want.Name, err)
		}
	case err != nil:
		return fmt.Errorf("reading NetworkPolicy %s: %w", want.Name, err)
	default:
		cur.Spec = want.Spec
		cur.Labels = want.Labels
		if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return fmt.Errorf("updating NetworkPolicy %s: %w", want.Name, err)
		}
	}
	b.mu.Lock()
	b.policyOK = true
	b.mu.Unlock()
	return nil
}

// Start implements sandbox.Backend: it creates the Pod, waits until it
// runs and connects to its keeper. On failure the Pod is deleted.
func (b *Backend) Start(ctx context.Context, spec sandbox.Spec) (sandbox.Session, error) {
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	b.startJanitor()
	if err := b.ensurePolicy(ctx, c); err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	filter, arch, err := syscallFilter()
	if err != nil {
		return nil, fmt.Errorf("kubernetes: %w", err)
	}
	pod, err := podFor(spec, podConfig{
		Namespace: c.namespace, Image: b.opts.Image, RuntimeClass: b.opts.RuntimeClass,
		NodeSelector: b.opts.NodeSelector, SeccompProfile: b.opts.SeccompProfile, Filter: filter, Arch: arch,
		IdleExpiry: b.opts.IdleExpiry, Replica: c.replica, Now: time.Now(),
	})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: session %s: %w", spec.ID, err)
	}
	began := time.Now()
	pods := c.cs.CoreV1().Pods(c.namespace)
	created, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: creating Pod %s: %w", pod.Name, err)
	}
	s, err := b.open(ctx, c, created, time.Time{})
	if err != nil {
		b.remove(c, created.Name, created.UID)
		return nil, fmt.Errorf("kubernetes: session %s: %w", spec.ID, err)
	}
	b.log.Debug("sandbox Pod started", "pod", created.Name, "took", time.Since(began))
	return s, nil
}

// Reattach implements sandbox.Reattacher.
func (b *Backend) Reattach(ctx context.Context, labels map[string]string) (sandbox.Session, error) {
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	b.startJanitor()
	sel, err := selector(labels)
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reattach: %w", err)
	}
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reattach: listing Pods: %w", err)
	}
	var found *corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !containerRunning(p) {
			continue
		}
		if found == nil || p.CreationTimestamp.After(found.CreationTimestamp.Time) {
			found = p
		}
	}
	if found == nil {
		return nil, sandbox.ErrNotFound
	}
	s, err := b.open(ctx, c, found, time.Now())
	if err != nil {
		return nil, fmt.Errorf("kubernetes: reattach to Pod %s: %w", found.Name, err)
	}
	return s, nil
}

// open waits for the Pod to run, then connects to its keeper and follows
// its log (from logsSince when set).
func (b *Backend) open(ctx context.Context, c *client, pod *corev1.Pod, logsSince time.Time) (*session, error) {
	pod, err := waitPod(ctx, c, pod.Name, func(p *corev1.Pod) (bool, error) {
		if p.UID != pod.UID {
			return false, errors.New("the Pod was replaced")
		}
		if p.DeletionTimestamp != nil {
			return false, errors.New("the Pod is being deleted")
		}
		if containerRunning(p) {
			return true, nil
		}
		return false, startFailure(p)
	})
	if err != nil {
		return nil, err
	}
	s := newSession(b, c, pod)
	if err := s.attach(ctx, logsSince); err != nil {
		s.drop()
		return nil, err
	}
	return s, nil
}

func containerRunning(p *corev1.Pod) bool {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == containerName && cs.State.Running != nil {
			return true
		}
	}
	return false
}

// startFailure says why a Pod that does not run yet never will.
func startFailure(p *corev1.Pod) error {
	if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return fmt.Errorf("the Pod ended before it ran (%s: %s)", p.Status.Reason, p.Status.Message)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.State.Terminated; t != nil {
			return fmt.Errorf("the sandbox container ended at once (%s, code %d): %s", t.Reason, t.ExitCode, t.Message)
		}
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
				"CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return fmt.Errorf("the sandbox container cannot start: %s: %s", w.Reason, w.Message)
			}
		}
	}
	return nil
}

// waitPod watches the Pod until done says so (or fails).
func waitPod(ctx context.Context, c *client, name string, done func(*corev1.Pod) (bool, error)) (*corev1.Pod, error) {
	pods := c.cs.CoreV1().Pods(c.namespace)
	for {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("reading Pod %s: %w", name, err)
		}
		if ok, err := done(p); ok || err != nil {
			return p, err
		}
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String(),
			ResourceVersion: p.ResourceVersion})
		if err != nil {
			return nil, fmt.Errorf("watching Pod %s: %w", name, err)
		}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == "DELETED" {
				w.Stop()
				return p, fmt.Errorf("pod %s: %w", name, errGone)
			}
			if ok, err := done(p); ok || err != nil {
				w.Stop()
				return p, err
			}
		}
		w.Stop()
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("waiting for Pod %s: %w", name, err)
		}
	}
}

var errGone = errors.New("deleted")

// waitGone waits until the Pod with uid no longer exists.
func waitGone(ctx context.Context, c *client, name string, uid types.UID) error {
	_, err := waitPod(ctx, c, name, func(p *corev1.Pod) (bool, error) { return p.UID != uid, nil })
	if err == nil || errors.Is(err, errGone) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// remove deletes a Pod at once (used when Start fails: nothing to wait for).
func (b *Backend) remove(c *client, name string, uid types.UID) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := deletePod(ctx, c, name, uid); err != nil {
		b.log.Warn("deleting sandbox Pod", "pod", name, "error", err)
	}
}

// deletePod deletes the Pod (if it is still the one with uid) and waits
// until it is gone: its processes have ended by then. The grace period is
// one second; the keeper exits at once on the SIGTERM, and the API only
// forgets a Pod once its node has stopped it (a grace period of 0 would
// remove the object while the processes still run).
func deletePod(ctx context.Context, c *client, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(1)), Preconditions: metav1.NewUIDPreconditions(string(uid))}
	err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, name, opts)
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting Pod %s: %w", name, err)
	}
	return waitGone(ctx, c, name, uid)
}

// executor opens an exec stream into the Pod: WebSocket first, SPDY for
// API servers without it, as kubectl does.
func executor(c *client, pod string, command []string) (remotecommand.Executor, error) {
	req := c.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(c.namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: containerName, Command: command, Stdin: true, Stdout: true, Stderr: true},
			scheme.ParameterCodec)
	spdy, err := remotecommand.NewSPDYExecutor(c.cfg, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	ws, err := remotecommand.NewWebSocketExecutor(c.cfg, "GET", req.URL().String())
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

// EgressBlocker says why sandbox Pods cannot reach the egress proxy: it is
// a Unix socket on codemode's host, and a Pod runs on a node.
func (b *Backend) EgressBlocker() string {
	return "the egress proxy is a Unix socket on codemode's host, which Pods on cluster nodes cannot mount (and their NetworkPolicy denies all traffic)"
}

// MountBlocker says why sandbox Pods cannot see host directories.
func (b *Backend) MountBlocker() string {
	return "a Pod runs on a cluster node and cannot see directories of codemode's host"
}

// Close stops the janitor and releases the owner claim. Sessions go on.
func (b *Backend) Close() error {
	b.mu.Lock()
	on := b.janitorOn
	owner := b.owner
	b.owner = nil
	c := b.client
	b.mu.Unlock()
	select {
	case <-b.stop:
	default:
		close(b.stop)
	}
	if on {
		<-b.stopped
	}
	if owner != nil {
		owner.Release()
	}
	if c != nil {
		utilnet.CloseIdleConnectionsFor(c.http.Transport)
	}
	return nil
}
