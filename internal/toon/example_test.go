package toon_test

import (
	"fmt"

	"github.com/codemode/codemode/internal/toon"
)

func ExampleEncodeJSON() {
	result := []byte(`{
		"ok": true,
		"stdout": ["loaded 3 files", "done: 2 errors"],
		"rows": [{"id": 1, "name": "Ada"}, {"id": 2, "name": "Bob"}],
		"elapsed_ms": 12.50
	}`)
	out, err := toon.EncodeJSON(result, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// ok: true
	// stdout[2]: loaded 3 files,"done: 2 errors"
	// rows[2]{id,name}:
	//   1,Ada
	//   2,Bob
	// elapsed_ms: 12.5
}

func ExampleEncode() {
	out, err := toon.Encode(map[string]any{
		"config": map[string]any{"server": map[string]any{"port": 8080}},
		"tags":   []string{"a", "b|c"},
	}, &toon.Options{Delimiter: toon.Pipe, KeyFolding: toon.KeyFoldingSafe})
	if err != nil {
		panic(err)
	}
	fmt.Println(out)
	// Output:
	// config.server.port: 8080
	// tags[2|]: a|"b|c"
}
