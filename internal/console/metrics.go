package console

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Headline is one number of the metrics shown above the sessions.
type Headline struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
}

// headline picks a counter of the metrics: the sum of its series whose
// label (if named) has the value.
type headline struct {
	name, metric, label, value string
}

// headlines are the numbers an admin sees first.
var headlines = []headline{
	{"run_python calls", "codemode_run_python_calls_total", "", ""},
	{"run_python errors", "codemode_run_python_calls_total", "status", "error"},
	{"run_python timeouts", "codemode_run_python_calls_total", "status", "timeout"},
	{"nested tool calls", "codemode_tool_calls_total", "", ""},
	{"tool calls denied", "codemode_tool_calls_total", "outcome", "denied"},
	{"policy asks", "codemode_policy_decisions_total", "decision", "ask"},
	{"sandboxes killed at the memory limit", "codemode_sandbox_exits_total", "cause", "oom"},
	{"downstream server restarts", "codemode_downstream_restarts_total", "", ""},
}

// metricsView gathers the headline numbers and each server's restarts.
func metricsView(g prometheus.Gatherer) ([]Headline, map[string]float64, error) {
	families, err := g.Gather()
	if err != nil {
		return nil, nil, err
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	out := make([]Headline, 0, len(headlines))
	for _, h := range headlines {
		v := 0.0
		if f := byName[h.metric]; f != nil {
			for _, m := range f.GetMetric() {
				if h.label == "" || labelValue(m, h.label) == h.value {
					v += m.GetCounter().GetValue()
				}
			}
		}
		out = append(out, Headline{Name: h.name, Value: v})
	}
	restarts := map[string]float64{}
	if f := byName["codemode_downstream_restarts_total"]; f != nil {
		for _, m := range f.GetMetric() {
			restarts[labelValue(m, "server")] += m.GetCounter().GetValue()
		}
	}
	return out, restarts, nil
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
