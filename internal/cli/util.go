package cli

import (
	"encoding/json"
	"io"
	"log/slog"
)

const slogWarn = slog.LevelWarn

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
