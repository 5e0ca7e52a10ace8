package app

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/codemode/codemode/internal/settings"
)

// AttackSettings returns the settings to attack each backend of list with
// (names, comma-separated; "" = the backend s selects, the first Auto one
// for auto). runsc is gVisor's runsc (name or path) for the backends that
// need it: one OCI runtime cannot serve both runc engines and gVisor, and
// one --runtime names one engine, so each backend gets its own.
func AttackSettings(s settings.Settings, list, runsc string) ([]settings.Settings, error) {
	names := strings.Split(list, ",")
	if list == "" {
		names = []string{s.Backend}
		if s.Backend == autoBackend {
			names = backendNames(autoBackends()[:1])
		}
	}
	var out []settings.Settings
	for _, name := range names {
		b, ok := LookupBackend(strings.TrimSpace(name))
		if !ok {
			return nil, unknownBackend(name)
		}
		bs := s
		bs.Backend = b.Name
		isRunsc := strings.Contains(bs.OCIRuntime, "runsc")
		switch {
		case b.Runsc && !isRunsc:
			bs.OCIRuntime = runsc
		case !b.Runsc && isRunsc:
			bs.OCIRuntime = ""
		}
		if b.Engine != "" && namesOtherEngine(bs.Runtime, b.Engine) {
			bs.Runtime = ""
		}
		out = append(out, bs)
	}
	return out, nil
}

// namesOtherEngine reports whether the runtime command names an engine of
// the table other than engine.
func namesOtherEngine(runtime, engine string) bool {
	base := strings.ToLower(filepath.Base(runtime))
	return slices.ContainsFunc(Backends(), func(b BackendInfo) bool {
		return b.Engine != "" && b.Engine != engine && strings.Contains(base, b.Engine)
	})
}
