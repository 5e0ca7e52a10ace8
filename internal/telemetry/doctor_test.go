package telemetry

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/telemetry/telemetrytest"
)

func TestDiagnose(t *testing.T) {
	served := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer served.Close()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { // accepts and hangs up: not an HTTP server
		for {
			c, err := busy.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	defer busy.Close()
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedAddr := closed.Addr().String()
	closed.Close()
	rcv := telemetrytest.Start(t)

	tests := []struct {
		name, metrics, endpoint string
		env                     []string
		wantOK                  [2]bool
		wantDetail              [2]string
	}{
		{"nothing configured", "", "", nil, [2]bool{true, true}, [2]string{"off", "off"}},
		{"metrics served, tracing reachable", strings.TrimPrefix(served.URL, "http://"), rcv.URL, nil, [2]bool{true, true}, [2]string{"answers", "reachable"}},
		{"metrics address free", closedAddr, "", nil, [2]bool{true, true}, [2]string{"will serve", "off"}},
		{"metrics address taken, collector down", busy.Addr().String(), "http://" + closedAddr, nil, [2]bool{false, false}, [2]string{"cannot listen", "unreachable"}},
		{"endpoint from the standard variable", "", "", []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + rcv.URL}, [2]bool{true, true}, [2]string{"off", "reachable"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diagnose(t.Context(), tt.metrics, tt.endpoint, tt.env)
			for i, f := range got {
				if f.OK != tt.wantOK[i] || !strings.Contains(f.Detail, tt.wantDetail[i]) {
					t.Errorf("%s: ok %v %q, want ok %v and %q", f.Name, f.OK, f.Detail, tt.wantOK[i], tt.wantDetail[i])
				}
			}
		})
	}
}
