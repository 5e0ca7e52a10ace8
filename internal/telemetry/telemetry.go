// Package telemetry is codemode's observability: Prometheus metrics (a
// registry per App, served by promhttp) and OpenTelemetry traces exported
// over OTLP. It plugs into the seams the other packages offer: the
// run_python handler (mcpserver.Observer), the nested tool-call chain
// (hostrpc.ToolMiddleware), the sandbox lifecycle (executor.Observer), policy
// decisions and downstream restarts. Label values are bounded: tool names
// come from the servers' own lists, anything else folds into "other".
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Other is the label value every tool name outside the servers' lists folds into.
const Other = "other"

// Options configure Telemetry.
type Options struct {
	Backend string // the sandbox backend's name, a label of the sandbox metrics
	Version string // codemode's version, for the trace resource
	// OTLPEndpoint is where traces go (a URL); "" leaves it to the standard
	// OTEL_EXPORTER_OTLP_* variables of Environ, and tracing is off when
	// neither names an endpoint.
	OTLPEndpoint string
	Environ      []string
	// TraceContent records code and tool arguments in spans.
	TraceContent bool
	Logger       *slog.Logger
}

// Telemetry holds one App's metrics registry and tracer.
type Telemetry struct {
	Registry *prometheus.Registry
	tracer   trace.Tracer
	provider *sdktrace.TracerProvider // nil: tracing off
	endpoint string                   // where traces go, for doctor and logs
	content  bool
	backend  string
	log      *slog.Logger
	m        *metrics

	mu    sync.RWMutex
	tools map[string]map[string]bool // server → its tools, from its own list
}

// New builds the registry and, when an endpoint is configured, the OTLP
// trace exporter (which connects lazily: a collector that is down costs
// dropped spans, not a failed start).
func New(ctx context.Context, o Options) (*Telemetry, error) {
	t := &Telemetry{Registry: prometheus.NewRegistry(), content: o.TraceContent, backend: o.Backend,
		log: o.Logger, tools: map[string]map[string]bool{}}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	t.m = newMetrics(t.Registry)
	exp, endpoint, err := exporter(ctx, o.OTLPEndpoint, envMap(o.Environ))
	if err != nil {
		return nil, fmt.Errorf("telemetry: trace exporter: %w", err)
	}
	if exp == nil {
		t.tracer = noop.NewTracerProvider().Tracer(scope)
		return t, nil
	}
	t.endpoint = endpoint
	t.provider = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(resource.NewWithAttributes(
		semconv.SchemaURL, semconv.ServiceName("codemode"), semconv.ServiceVersion(o.Version))))
	t.tracer = t.provider.Tracer(scope)
	t.log.Info("tracing on", "endpoint", endpoint, "content", o.TraceContent)
	return t, nil
}

const scope = "github.com/codemode/codemode"

// traceTarget resolves where traces go: the protocol and the endpoint as
// configured (flag first, then the standard variables); on is false when
// tracing is off.
func traceTarget(endpoint string, env map[string]string) (proto, shown string, on bool, err error) {
	if strings.EqualFold(env["OTEL_SDK_DISABLED"], "true") || strings.EqualFold(env["OTEL_TRACES_EXPORTER"], "none") {
		return "", "", false, nil
	}
	shown = firstOf(endpoint, env["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"], env["OTEL_EXPORTER_OTLP_ENDPOINT"])
	if shown == "" {
		return "", "", false, nil
	}
	proto = firstOf(env["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"], env["OTEL_EXPORTER_OTLP_PROTOCOL"], "http/protobuf")
	if proto != "grpc" && proto != "http/protobuf" {
		return "", "", false, fmt.Errorf("OTLP protocol %q is not supported (grpc or http/protobuf)", proto)
	}
	return proto, shown, true, nil
}

// exporter returns the OTLP exporter the settings and variables ask for,
// nil when tracing is off. The exporters read the other OTEL_EXPORTER_OTLP_*
// variables (headers, TLS, timeouts) themselves.
func exporter(ctx context.Context, endpoint string, env map[string]string) (sdktrace.SpanExporter, string, error) {
	proto, shown, on, err := traceTarget(endpoint, env)
	if !on || err != nil {
		return nil, "", err
	}
	if proto == "grpc" {
		var opts []otlptracegrpc.Option
		if endpoint != "" {
			opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
		}
		exp, err := otlptracegrpc.New(ctx, opts...)
		return exp, "grpc " + shown, err
	}
	var opts []otlptracehttp.Option
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(strings.TrimSuffix(endpoint, "/")+"/v1/traces"))
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	return exp, "http " + shown, err
}

func firstOf(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

func envMap(list []string) map[string]string {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

// Tracing reports whether spans are exported, and where to.
func (t *Telemetry) Tracing() (bool, string) { return t.provider != nil, t.endpoint }

// Flush exports the spans ended so far.
func (t *Telemetry) Flush(ctx context.Context) error {
	if t.provider == nil {
		return nil
	}
	return t.provider.ForceFlush(ctx)
}

// Close flushes and stops the trace exporter.
func (t *Telemetry) Close(ctx context.Context) error {
	if t.provider == nil {
		return nil
	}
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("telemetry: shutting down the tracer: %w", err)
	}
	return nil
}

// Handler serves the metrics in the Prometheus exposition format.
func (t *Telemetry) Handler() http.Handler {
	return promhttp.HandlerFor(t.Registry, promhttp.HandlerOpts{Registry: t.Registry})
}

// ServeMetrics listens on addr (failing at once if it cannot) and serves
// /metrics until ctx ends. listening, if set, learns the bound address.
func (t *Telemetry) ServeMetrics(ctx context.Context, addr string, listening func(string)) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listening on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", t.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	t.log.Info("serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	if listening != nil {
		listening(ln.Addr().String())
	}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.log.Error("metrics listener failed", "error", err)
		}
	}()
	return nil
}

// ToolsLoaded records a server's tool list, the only tool names used as
// label values (pass it to downstream.Pool.WatchTools).
func (t *Telemetry) ToolsLoaded(server string, tools []*mcp.Tool) {
	set := make(map[string]bool, len(tools))
	for _, tool := range tools {
		set[tool.Name] = true
	}
	t.mu.Lock()
	t.tools[server] = set
	t.mu.Unlock()
}

// toolLabel is tool if the server listed it, else Other.
func (t *Telemetry) toolLabel(server, tool string) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.tools[server][tool] {
		return tool
	}
	return Other
}
