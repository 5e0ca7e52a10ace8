package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/codemode/codemode/internal/pyruntime"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/codemode/codemode/internal/sandbox"
	"github.com/codemode/codemode/internal/sandbox/container"
	"github.com/codemode/codemode/internal/sandbox/kubernetes"
	"github.com/codemode/codemode/internal/sandbox/linuxns"
	"github.com/codemode/codemode/internal/sandbox/posture"
	"github.com/codemode/codemode/internal/settings"
)

// autoBackend is the backend setting's default: the first Auto backend
// that runs here.
const autoBackend = "auto"

// BackendInfo describes one sandbox backend.
type BackendInfo struct {
	Name    string
	Summary string // one line, for help text
	// Auto: the "auto" backend setting tries it, in table order.
	Auto bool
	// Engine is the container engine the backend runs on ("" for none, or
	// for either): with backend auto, a --runtime naming an engine selects
	// the Auto backend with that Engine.
	Engine string
	// Runsc: the backend needs gVisor's runsc as the OCI runtime, whose
	// user-space kernel serves the code's system calls.
	Runsc bool
	New   func(s settings.Settings, environ []string, log *slog.Logger) sandbox.Backend
	// Expect is how its posture legitimately differs from the native
	// sandbox's, for doctor's check from inside and the attack suite.
	Expect posture.Expect
}

// Backends is the table of sandbox backends: backend selection, the
// backend setting's choices, doctor, the attack suite and the help text
// all read it.
func Backends() []BackendInfo {
	return []BackendInfo{
		{Name: "native", Auto: true, New: newNative,
			Summary: "Linux namespaces, seccomp and Landlock, built into codemode; needs no engine"},
		{Name: "podman", Auto: true, Engine: string(container.Podman), New: newContainer("podman"),
			Summary: "a hardened podman container per session (--image)", Expect: posture.Expect{ImageRoot: true}},
		{Name: "docker", Auto: true, Engine: string(container.Docker), New: newContainer("docker"),
			Summary: "a hardened docker container per session (--image)", Expect: posture.Expect{ImageRoot: true}},
		{Name: "gvisor", Runsc: true, New: newContainer("gvisor"),
			Summary: "a podman (or --runtime docker) container under gVisor's runsc, a user-space kernel",
			Expect:  posture.Expect{ImageRoot: true, NoLoopback: true, PtraceAllowed: true}},
		{Name: kubernetes.Name, New: newKubernetes,
			Summary: "a hardened Pod per session on a Kubernetes cluster (--kubeconfig, --namespace, --image, --runtime-class); sessions survive their replica",
			Expect:  posture.Expect{ImageRoot: true, PodNetwork: true, ExecScratch: true}},
	}
}

func newKubernetes(s settings.Settings, environ []string, log *slog.Logger) sandbox.Backend {
	selector := map[string]string{}
	for _, kv := range s.NodeSelector {
		k, v, _ := strings.Cut(kv, "=")
		selector[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	// A Pod whose replicas are all gone ends as its session would have: at
	// the idle timeout, plus the lag of its activity record.
	var expiry time.Duration
	if s.IdleTimeout > 0 {
		expiry = s.IdleTimeout + kubernetes.ActivityLag
	}
	return kubernetes.New(kubernetes.Options{Kubeconfig: s.Kubeconfig, Namespace: s.KubeNamespace, Image: s.Image,
		RuntimeClass: s.RuntimeClass, NodeSelector: selector, SeccompProfile: s.KubeSeccomp, IdleExpiry: expiry,
		Environ: environ, Logger: log.With("backend", kubernetes.Name)})
}

func newNative(s settings.Settings, _ []string, log *slog.Logger) sandbox.Backend {
	opts := &linuxns.Options{Rootfs: s.Rootfs, DisableLandlock: s.DisableLandlock, Zygote: s.Zygote, Preload: s.Preload, Logger: log}
	if s.Zygote {
		// The zygote also imports the runtime, which each session would
		// otherwise compile as it boots.
		if bundle, err := pyruntime.Load(); err == nil {
			opts.ZygoteWarm = bundle.Warm()
		}
	}
	return linuxns.New(opts)
}

func newContainer(name string) func(settings.Settings, []string, *slog.Logger) sandbox.Backend {
	return func(s settings.Settings, environ []string, log *slog.Logger) sandbox.Backend {
		opts := &container.Options{Name: name, OCIRuntime: s.OCIRuntime, Image: s.Image, User: s.ContainerUser,
			StateDir: s.StateDir, Env: environ, Pull: s.Pull, Logger: log.With("backend", name)}
		// --runtime names the engine; for gvisor it picks which engine runs
		// runsc (podman by default, docker with --runtime docker).
		if s.Runtime != "" {
			opts.Command = []string{s.Runtime}
		}
		return container.New(opts)
	}
}

// LookupBackend finds a backend of the table by name.
func LookupBackend(name string) (BackendInfo, bool) {
	all := Backends()
	i := slices.IndexFunc(all, func(b BackendInfo) bool { return b.Name == name })
	if i < 0 {
		return BackendInfo{}, false
	}
	return all[i], true
}

// NewBackend builds the named backend from the settings.
func NewBackend(name string, s settings.Settings, environ []string, log *slog.Logger) (sandbox.Backend, error) {
	b, ok := LookupBackend(name)
	if !ok {
		return nil, unknownBackend(name)
	}
	return b.New(s, environ, log), nil
}

func unknownBackend(name string) error {
	return fmt.Errorf("sandbox backend %q: unknown, want one of %s", name, strings.Join(backendNames(Backends()), ", "))
}

// BackendChoices are the values the backend setting accepts: auto, then
// the table.
func BackendChoices() []settings.Choice {
	choices := []settings.Choice{{Name: autoBackend, Summary: "the first of " + strings.Join(backendNames(autoBackends()), ", ") +
		" that runs here (a --runtime naming an engine picks that engine's)"}}
	for _, b := range Backends() {
		choices = append(choices, settings.Choice{Name: b.Name, Summary: b.Summary})
	}
	return choices
}

// SettingsRegistry is every setting, the backend setting's choices taken
// from the table.
func SettingsRegistry() settings.Registry {
	return settings.NewRegistry(BackendChoices())
}

// Candidates lists the backends the settings allow, in preference order:
// the configured one, or for "auto" the Auto backends in table order. The
// reference project's MCP_BRIDGE_RUNTIME (podman, docker or a path) picks
// a container engine when the backend is auto: the Auto backend whose
// engine it names, else the first with an engine.
func Candidates(s settings.Settings) []string {
	if s.Backend != autoBackend {
		return []string{s.Backend}
	}
	auto := autoBackends()
	if s.Runtime != "" {
		engines := slices.DeleteFunc(slices.Clone(auto), func(b BackendInfo) bool { return b.Engine == "" })
		base := strings.ToLower(filepath.Base(s.Runtime))
		for _, b := range engines {
			if strings.Contains(base, b.Engine) {
				return []string{b.Name}
			}
		}
		if len(engines) > 0 {
			return []string{engines[0].Name}
		}
	}
	return backendNames(auto)
}

// autoBackends lists the backends "auto" tries, in order.
func autoBackends() []BackendInfo {
	return slices.DeleteFunc(Backends(), func(b BackendInfo) bool { return !b.Auto })
}

func backendNames(bs []BackendInfo) []string {
	names := make([]string, len(bs))
	for i, b := range bs {
		names[i] = b.Name
	}
	return names
}

// selectBackend probes the candidates and returns the first that works.
func selectBackend(ctx context.Context, s settings.Settings, environ []string, log *slog.Logger) (sandbox.Backend, sandbox.Capabilities, error) {
	var errs []error
	for _, name := range Candidates(s) {
		b, err := NewBackend(name, s, environ, log)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		caps, err := b.Probe(ctx)
		if err == nil {
			return b, caps, nil
		}
		log.Info("sandbox backend unavailable", "backend", b.Name(), "error", err)
		errs = append(errs, fmt.Errorf("%s: %w", b.Name(), err))
	}
	return nil, sandbox.Capabilities{}, fmt.Errorf("no sandbox backend can run here (run `codemode doctor` for details): %w", errors.Join(errs...))
}
