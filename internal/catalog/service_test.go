package catalog

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/gate"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/codemode/codemode/internal/policy"
	"github.com/codemode/codemode/internal/proxy"
	"github.com/codemode/codemode/internal/tooldocs"
)

type allowAll struct{ p *policy.Policy }

func (a allowAll) Current() *policy.Policy { return a.p }

// A remote that answers 401 needs a sign-in codemode cannot do: the add
// fails with kind needs_sign_in and leaves nothing registered.
func TestAddRemoteNeedsSignIn(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://example.com/.well-known/oauth-protected-resource"`)
		http.Error(w, "sign in first", http.StatusUnauthorized)
	}))
	defer srv.Close()
	p, err := policy.Parse([]byte("add_default = \"allow\""), "toml")
	if err != nil {
		t.Fatal(err)
	}
	pool := downstream.New(downstream.Options{})
	defer pool.Close()
	px := proxy.New(proxy.Options{Pool: pool, Catalog: tooldocs.NewCatalog(nil)})
	svc := NewService(ServiceOptions{
		Catalog: New([]Entry{{Name: "com.example/private", Description: "a private remote", Remotes: []Remote{{Type: "streamable-http", URL: srv.URL}}}}),
		Servers: px, Decider: gate.New(gate.Options{Policy: allowAll{p}}),
	})
	_, err = svc.Add(context.Background(), hostrpc.Caller{Principal: "alice"}, AddRequest{Name: "private"})
	w := hostrpc.ToWire(err)
	if err == nil || w.Kind != "needs_sign_in" || !strings.Contains(w.Message, "needs sign-in") {
		t.Fatalf("Add: %+v", w)
	}
	if _, ok := px.Alias("private"); ok {
		t.Fatal("a server that failed to start stayed registered")
	}
	if names := pool.Names(); len(names) != 0 {
		t.Fatalf("the pool kept %v", names)
	}
	if got := svc.Find("private remote", 1); len(got) != 1 || got[0].Configured {
		t.Fatalf("Find: %+v", got)
	}
}
