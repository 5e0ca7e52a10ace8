package telemetry

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"time"
)

// Finding is one line of doctor's observability section.
type Finding struct {
	Name   string
	OK     bool
	Detail string
	Fix    string
}

// Diagnose reports whether metrics and tracing are configured and
// reachable: the metrics address is served (by a running codemode) or free
// to listen on, and the OTLP endpoint accepts connections.
func Diagnose(ctx context.Context, metricsAddr, otlpEndpoint string, environ []string) []Finding {
	return []Finding{diagnoseMetrics(ctx, metricsAddr), diagnoseTracing(ctx, otlpEndpoint, envMap(environ))}
}

func diagnoseMetrics(ctx context.Context, addr string) Finding {
	f := Finding{Name: "metrics", OK: true}
	if addr == "" {
		f.Detail = "off (--metrics ADDR or CODEMODE_METRICS serves them; over HTTP they are also at /metrics)"
		return f
	}
	u := "http://" + addr + "/metrics"
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil); err == nil {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				f.Detail = u + " answers (a codemode is serving it)"
				return f
			}
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return Finding{Name: "metrics", Detail: fmt.Sprintf("cannot listen on %s: %v", addr, err), Fix: "choose a free address for --metrics"}
	}
	ln.Close()
	f.Detail = "codemode will serve " + u
	return f
}

func diagnoseTracing(ctx context.Context, endpoint string, env map[string]string) Finding {
	proto, shown, on, err := traceTarget(endpoint, env)
	switch {
	case err != nil:
		return Finding{Name: "tracing", Detail: err.Error(), Fix: "set OTEL_EXPORTER_OTLP_PROTOCOL to grpc or http/protobuf"}
	case !on:
		return Finding{Name: "tracing", OK: true, Detail: "off (--otlp-endpoint or OTEL_EXPORTER_OTLP_ENDPOINT turns it on)"}
	}
	u, err := url.Parse(shown)
	if err != nil || u.Host == "" {
		return Finding{Name: "tracing", Detail: fmt.Sprintf("endpoint %q is not a URL", shown), Fix: "give the endpoint as a URL, e.g. http://localhost:4318"}
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[u.Scheme == "https"])
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", host)
	if err != nil {
		return Finding{Name: "tracing", Detail: fmt.Sprintf("OTLP %s endpoint %s is unreachable: %v", proto, shown, err),
			Fix: "start a collector there (e.g. Jaeger, which accepts OTLP on 4317 and 4318) or fix --otlp-endpoint"}
	}
	conn.Close()
	return Finding{Name: "tracing", OK: true, Detail: fmt.Sprintf("OTLP %s to %s (reachable)", proto, shown)}
}
