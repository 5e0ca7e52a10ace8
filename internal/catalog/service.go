package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/codemode/codemode/internal/gate"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/policy"
	"github.com/codemode/codemode/internal/serverconfig"
	"github.com/codemode/codemode/internal/tooldocs"
)

// Servers is what the service needs of the proxy: which servers exist, and
// adding one while codemode runs.
type Servers interface {
	// Alias reports the alias of the server called name, if there is one.
	Alias(name string) (string, bool)
	// AddServer registers cfg, starts it and lists its tools; on failure
	// nothing stays registered.
	AddServer(ctx context.Context, cfg serverconfig.Server) (alias string, err error)
}

// Decider is the policy boundary for adds (a *gate.Gate).
type Decider interface {
	DecideAdd(ctx context.Context, r gate.AddRequest) error
}

// ServiceOptions configure a Service.
type ServiceOptions struct {
	Catalog *Catalog // nil: an empty catalog
	Servers Servers  // required
	// Decider decides every add; nil refuses them all.
	Decider Decider
	Launch  LaunchOptions
	// ConfigDir is where add_server(persist=True) writes a server's config
	// file (see ConfigDir); empty refuses persist.
	ConfigDir string
	Logger    *slog.Logger
}

// Service answers the sandbox's find_servers and add_server requests.
type Service struct {
	opts ServiceOptions
	log  *slog.Logger

	addMu sync.Mutex        // one add at a time, so one entry starts once
	mu    sync.Mutex        // guards added
	added map[string]string // entry name → server name
}

// NewService returns a Service.
func NewService(opts ServiceOptions) *Service {
	if opts.Catalog == nil {
		opts.Catalog = New(nil)
	}
	s := &Service{opts: opts, log: opts.Logger, added: map[string]string{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Register adds the find_servers and add_server handlers to mux.
func (s *Service) Register(mux *hostrpc.Mux) {
	mux.Handle(hostrpc.FindServers, func(_ context.Context, req *hostrpc.Request) (any, error) {
		var p struct {
			Query string `json:"query"`
			Limit *int   `json:"limit"`
		}
		if err := hostrpc.Decode(req, &p); err != nil {
			return nil, err
		}
		if strings.TrimSpace(p.Query) == "" {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "Missing 'query' value")
		}
		limit := tooldocs.DefaultSearchLimit
		if p.Limit != nil {
			limit = *p.Limit
		}
		return s.Find(p.Query, limit), nil
	})
	mux.Handle(hostrpc.AddServer, func(ctx context.Context, req *hostrpc.Request) (any, error) {
		var p struct {
			Name    string            `json:"name"`
			Env     map[string]string `json:"env"`
			Persist bool              `json:"persist"`
		}
		if err := hostrpc.Decode(req, &p); err != nil {
			return nil, err
		}
		if strings.TrimSpace(p.Name) == "" {
			return nil, hostrpc.Errorf(hostrpc.KindInvalid, "Missing server name")
		}
		return s.Add(ctx, req.Caller, AddRequest{Name: p.Name, Env: p.Env, Persist: p.Persist})
	})
}

// Find ranks the catalog's entries for query, marking those already
// configured or added.
func (s *Service) Find(query string, limit int) []Match {
	return s.opts.Catalog.Find(query, limit, func(entry string) (string, bool) {
		_, alias, ok := s.existing(entry)
		return alias, ok
	})
}

// existing finds the server an entry already is: one added from it, or a
// configured server of the entry's name.
func (s *Service) existing(entry string) (server, alias string, ok bool) {
	s.mu.Lock()
	server, added := s.added[entry]
	s.mu.Unlock()
	if !added {
		server = entry
	}
	alias, ok = s.opts.Servers.Alias(server)
	return server, alias, ok
}

// Added is a server added from a catalog.
type Added struct {
	Name        string `json:"name"`  // the server's name (its policy rules use it)
	Alias       string `json:"alias"` // mcp_<alias> in the sandbox
	Description string `json:"description"`
	Entry       string `json:"entry"` // the catalog entry's name
	// Config is the file the server was kept in (persist), else "".
	Config string `json:"config,omitempty"`
}

// AddRequest is what code asks to add.
type AddRequest struct {
	Name string            // the entry's name, or the last part of it
	Env  map[string]string // values of the entry's plain variables
	// Persist keeps the server in codemode's config directory, once a
	// human approves.
	Persist bool
}

// Add adds the catalog entry r names as a server for everyone using this
// codemode: the policy decides (asking a human when it says ask, and
// always for persist), the server starts and its tools are listed. Adding
// an entry already added returns it again.
func (s *Service) Add(ctx context.Context, caller hostrpc.Caller, r AddRequest) (Added, error) {
	name, env := r.Name, r.Env
	if r.Persist && s.opts.ConfigDir == "" {
		return Added{}, hostrpc.Errorf(hostrpc.KindUnavailable, "persist is not available: codemode has no config directory")
	}
	s.addMu.Lock()
	defer s.addMu.Unlock()
	e, found := s.opts.Catalog.Get(name)
	var before *Added // the server the entry already is
	if found {
		if server, alias, ok := s.existing(e.Name); ok {
			a := Added{Name: server, Alias: alias, Description: e.Description, Entry: e.Name}
			s.mu.Lock()
			_, fromCatalog := s.added[e.Name]
			s.mu.Unlock()
			// A configured server is in a config file already.
			if !r.Persist || !fromCatalog {
				return a, nil
			}
			before = &a
		}
	} else {
		e = Entry{Name: name}
	}
	if s.opts.Decider == nil {
		return Added{}, hostrpc.Errorf(hostrpc.KindUnavailable, "adding servers is not enabled (no catalog is configured)")
	}
	// The short name reads better in code (mcp_server_memory) unless a
	// configured server already has it.
	server := shortName(e.Name)
	if before != nil {
		server = before.Name
	} else if _, taken := s.opts.Servers.Alias(server); taken {
		server = e.Name
	}
	var cfg serverconfig.Server
	if found {
		// A request that cannot run is refused before anyone is asked.
		var err error
		if cfg, err = e.Server(server, env, s.opts.Launch); err != nil {
			var le *Error
			if errors.As(err, &le) {
				return Added{}, &hostrpc.Error{Kind: le.Kind, Server: e.Name, Message: le.Msg}
			}
			return Added{}, err
		}
	}
	if err := s.opts.Decider.DecideAdd(ctx, gate.AddRequest{Caller: caller, Persist: r.Persist,
		AddInput: policy.AddInput{Name: e.Name, Registry: e.Registry(), Source: e.Source, Catalogued: found}}); err != nil {
		return Added{}, err
	}
	added := Added{}
	if before != nil {
		added = *before
	} else {
		var err error
		if added, err = s.start(ctx, caller, e, cfg); err != nil {
			return Added{}, err
		}
	}
	if r.Persist {
		path, err := e.WriteConfig(s.opts.ConfigDir, cfg)
		if err != nil {
			return Added{}, &hostrpc.Error{Kind: hostrpc.KindError, Server: e.Name, Message: fmt.Sprintf("%s was added for this run, but keeping it failed: %v", e.Name, err)}
		}
		added.Config = path
	}
	return added, nil
}

// start adds and starts the server cfg configures for entry e.
func (s *Service) start(ctx context.Context, caller hostrpc.Caller, e Entry, cfg serverconfig.Server) (Added, error) {
	alias, err := s.opts.Servers.AddServer(ctx, cfg)
	if err != nil {
		if unauthorized(err) {
			return Added{}, &hostrpc.Error{Kind: "needs_sign_in", Server: e.Name,
				Message: fmt.Sprintf("%s at %s needs sign-in (the server answered 401 Unauthorized); codemode cannot sign in to it yet", e.Name, cfg.URL)}
		}
		var he *hostrpc.Error
		if errors.As(err, &he) {
			return Added{}, he
		}
		return Added{}, &hostrpc.Error{Kind: "start", Server: e.Name, Message: fmt.Sprintf("starting %s: %v", e.Name, err)}
	}
	s.mu.Lock()
	s.added[e.Name] = cfg.Name
	s.mu.Unlock()
	s.log.Info("server added from a catalog", "entry", e.Name, "server", cfg.Name, "source", e.Source, "principal", caller.Principal)
	return Added{Name: cfg.Name, Alias: alias, Description: e.Description, Entry: e.Name}, nil
}

// unauthorized reports a start that failed on HTTP 401: the server wants
// a sign-in.
func unauthorized(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "401") || strings.Contains(msg, http.StatusText(http.StatusUnauthorized))
}
