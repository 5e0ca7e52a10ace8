package toon

import (
	"encoding/json"
	"fmt"
	"testing"
)

// runPythonResult is shaped like a run_python tool result: a few scalar
// fields, a structured result, and 200 lines of captured stdout.
func runPythonResult(tb testing.TB) []byte {
	tb.Helper()
	stdout := make([]string, 200)
	for i := range stdout {
		switch i % 4 {
		case 0:
			stdout[i] = fmt.Sprintf("processing item %d of 200", i)
		case 1:
			stdout[i] = fmt.Sprintf("INFO: loaded %d records from data/part-%03d.csv", i*17, i)
		case 2:
			stdout[i] = fmt.Sprintf("score=%.4f, delta=%.2f", float64(i)/7, float64(i%13)-6.5)
		default:
			stdout[i] = fmt.Sprintf("  step %d done", i)
		}
	}
	payload := map[string]any{
		"ok":          true,
		"duration_ms": 1234.5,
		"session":     "s-4f2a9c",
		"result":      map[string]any{"status": "done", "count": 200, "mean": 14.2857},
		"stdout":      stdout,
		"stderr":      "",
	}
	data, err := json.Marshal(payload)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// uniformTable is a 1000-row array of uniform objects, the tabular case.
func uniformTable(tb testing.TB) []byte {
	tb.Helper()
	type row struct {
		ID     int     `json:"id"`
		Name   string  `json:"name"`
		Email  string  `json:"email"`
		Score  float64 `json:"score"`
		Active bool    `json:"active"`
		Team   string  `json:"team"`
	}
	rows := make([]row, 1000)
	for i := range rows {
		rows[i] = row{i, fmt.Sprintf("user %d", i), fmt.Sprintf("user%d@example.com", i), float64(i) * 1.25, i%3 == 0, []string{"core", "infra", "ml, research"}[i%3]}
	}
	data, err := json.Marshal(map[string]any{"rows": rows})
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

func BenchmarkEncodeJSON(b *testing.B) {
	for _, bc := range []struct {
		name string
		data []byte
	}{
		{"run_python-result", runPythonResult(b)},
		{"table-1000-rows", uniformTable(b)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := EncodeJSON(bc.data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
