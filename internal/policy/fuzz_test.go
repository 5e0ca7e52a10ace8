package policy

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: no document, in any format, makes Parse panic, and a policy
// that parses can be applied, hidden-checked and summarised without
// panicking; Hidden never hides a tool Decide would not deny.
func FuzzParse(f *testing.F) {
	fuzzFormats := []string{"toml", "json", "yaml"}
	files, _ := filepath.Glob("testdata/*.*")
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		format, err := formatOf(file)
		if err != nil {
			continue
		}
		for i, fm := range fuzzFormats {
			if fm == format {
				f.Add(data, uint8(i))
			}
		}
	}
	f.Add([]byte(Starter()), uint8(0))
	f.Add([]byte(decidePolicy), uint8(0))
	f.Add([]byte(hiddenPolicy), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, format uint8) {
		p, err := Parse(data, fuzzFormats[int(format)%len(fuzzFormats)])
		if err != nil {
			return
		}
		if d := p.DecideAdd(AddInput{Name: "a/b", Registry: "npm", Source: "c.json", Catalogued: true}); d.Effect < Allow || d.Effect > Ask {
			t.Fatalf("DecideAdd gave effect %d", d.Effect)
		}
		in := Input{Server: "fs", Tool: "write_file", Args: map[string]any{"path": "/x"}, Principal: "alice"}
		d := p.Decide(context.Background(), in)
		if d.Effect < Allow || d.Effect > Ask {
			t.Fatalf("Decide gave effect %d", d.Effect)
		}
		if p.Hidden(in.Server, in.Tool) && d.Effect != Deny {
			t.Fatalf("Hidden but Decide = %v", d)
		}
		p.ServerHidden(in.Server)
		p.ServerDecision(context.Background(), in)
		p.Explain(d)
		p.Summary()
	})
}
