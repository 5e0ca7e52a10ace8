package telemetry

import (
	"strconv"
	"time"

	"github.com/codemode/codemode/internal/policy"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are codemode's own series; names and labels are listed in the
// README.
type metrics struct {
	runCalls     *prometheus.CounterVec
	runDuration  prometheus.Histogram
	sandboxStart *prometheus.HistogramVec
	sandboxExits *prometheus.CounterVec
	toolCalls    *prometheus.CounterVec
	toolDuration *prometheus.HistogramVec
	restarts     *prometheus.CounterVec
	policy       *prometheus.CounterVec
	egressReqs   *prometheus.CounterVec
	egressBytes  *prometheus.CounterVec
}

// durations spans a fast cell (ms) to the longest timeout (minutes).
var durations = prometheus.ExponentialBucketsRange(0.005, 300, 16)

func newMetrics(reg *prometheus.Registry) *metrics {
	f := func(c prometheus.Collector) { reg.MustRegister(c) }
	m := &metrics{
		runCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_run_python_calls_total",
			Help: "run_python calls by result status."}, []string{"status"}),
		runDuration: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "codemode_run_python_duration_seconds",
			Help: "Duration of run_python calls, session acquisition included.", Buckets: durations}),
		sandboxStart: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "codemode_sandbox_start_seconds",
			Help:    "Time to start a sandboxed interpreter, for a session (spare=false) or ahead of need (spare=true).",
			Buckets: prometheus.ExponentialBucketsRange(0.01, 60, 12)}, []string{"backend", "spare"}),
		sandboxExits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_sandbox_exits_total",
			Help: "Session sandboxes that ended, by cause."}, []string{"backend", "cause"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_tool_calls_total",
			Help: "Tool calls made from code, by server, tool and outcome."}, []string{"server", "tool", "outcome"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "codemode_tool_call_duration_seconds",
			Help: "Duration of tool calls made from code, policy included.", Buckets: durations}, []string{"server"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_downstream_restarts_total",
			Help: "Downstream MCP servers that ended unexpectedly (restarted on next use)."}, []string{"server"}),
		policy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_policy_decisions_total",
			Help: "Policy decisions over tool calls made from code."}, []string{"decision"}),
		egressReqs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_egress_requests_total",
			Help: "Network requests of sandboxes through the egress proxy, by the allow-list entry that allowed the host and decision (hosts off the allow-list share one label)."}, []string{"host", "decision"}),
		egressBytes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "codemode_egress_bytes_total",
			Help: "Bytes through the egress proxy, by allow-list entry and direction (in: to the sandbox, out: to the host)."}, []string{"host", "direction"}),
	}
	f(m.runCalls)
	f(m.runDuration)
	f(m.sandboxStart)
	f(m.sandboxExits)
	f(m.toolCalls)
	f(m.toolDuration)
	f(m.restarts)
	f(m.policy)
	f(m.egressReqs)
	f(m.egressBytes)
	f(collectors.NewGoCollector())
	f(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// SandboxStarted implements executor.Observer.
func (t *Telemetry) SandboxStarted(spare bool, d time.Duration) {
	t.m.sandboxStart.WithLabelValues(t.backend, strconv.FormatBool(spare)).Observe(d.Seconds())
}

// SandboxExited implements executor.Observer.
func (t *Telemetry) SandboxExited(cause string) {
	t.m.sandboxExits.WithLabelValues(t.backend, cause).Inc()
}

// CountSessions makes codemode_sessions_active read count at each scrape.
func (t *Telemetry) CountSessions(count func() int) {
	t.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "codemode_sessions_active",
		Help: "Live run_python sessions.", ConstLabels: prometheus.Labels{"backend": t.backend}},
		func() float64 { return float64(count()) }))
}

// PolicyDecision counts a decision of the policy gate (gate.Options.Observe).
func (t *Telemetry) PolicyDecision(d policy.Decision) {
	t.m.policy.WithLabelValues(d.Effect.String()).Inc()
}

// ServerEnded counts a downstream server that ended unexpectedly
// (downstream.Options.Ended).
func (t *Telemetry) ServerEnded(server string) {
	t.m.restarts.WithLabelValues(server).Inc()
}

// EgressRequest counts a sandbox's network request through the egress
// proxy (gate.Options.EgressObserve).
func (t *Telemetry) EgressRequest(host, decision string, in, out int64) {
	t.m.egressReqs.WithLabelValues(host, decision).Inc()
	if in > 0 {
		t.m.egressBytes.WithLabelValues(host, "in").Add(float64(in))
	}
	if out > 0 {
		t.m.egressBytes.WithLabelValues(host, "out").Add(float64(out))
	}
}
