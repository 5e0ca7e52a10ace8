package telemetrytest

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are scraped metric families by name.
type Metrics map[string]*dto.MetricFamily

// Scrape fetches url, fails on codemode_ series that `promtool check
// metrics` would flag (it runs the same linter), and parses the exposition.
func Scrape(t testing.TB, url string) Metrics {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	var body bytes.Buffer
	if _, err := body.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.New(bytes.NewReader(body.Bytes())).Lint()
	if err != nil {
		t.Fatalf("lint: %v", err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "codemode_") {
			t.Errorf("promlint: %s: %s", p.Metric, p.Text)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body.Bytes()))
	if err != nil {
		t.Fatalf("parsing the exposition: %v\n%s", err, body.String())
	}
	return families
}

// Value is the counter or gauge value, or the histogram's sample count, of
// the series of name with exactly labels; -1 when there is none.
func (m Metrics) Value(name string, labels map[string]string) float64 {
	f := m[name]
	if f == nil {
		return -1
	}
next:
	for _, s := range f.Metric {
		if len(s.Label) != len(labels) {
			continue
		}
		for _, l := range s.Label {
			if labels[l.GetName()] != l.GetValue() {
				continue next
			}
		}
		switch {
		case s.Counter != nil:
			return s.Counter.GetValue()
		case s.Gauge != nil:
			return s.Gauge.GetValue()
		case s.Histogram != nil:
			return float64(s.Histogram.GetSampleCount())
		}
	}
	return -1
}
