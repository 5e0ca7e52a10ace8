package cli

import (
	"encoding/json"
	"io"
	"log/slog"
	"strings"

	"github.com/codemode/codemode/internal/app"
)

const slogWarn = slog.LevelWarn

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// backendNames lists the sandbox backends, for flag docs.
func backendNames() string {
	var names []string
	for _, b := range app.Backends() {
		names = append(names, b.Name)
	}
	return strings.Join(names, ", ")
}
