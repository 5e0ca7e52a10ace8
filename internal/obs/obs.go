// Package obs sets up structured logging: a slog handler on stderr (never
// stdout, which belongs to the MCP protocol in stdio mode) that adds the
// request id carried in the context to every record.
package obs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"
)

type ctxKey struct{}

// WithRequestID returns ctx carrying a new request id, and the id.
func WithRequestID(ctx context.Context) (context.Context, string) {
	var b [4]byte
	rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	return context.WithValue(ctx, ctxKey{}, id), id
}

// RequestID returns the request id in ctx, or "".
func RequestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// NewLogger returns a text logger on w at level that tags records with the
// context's request id.
func NewLogger(w io.Writer, level slog.Leveler) *slog.Logger {
	return slog.New(&handler{Handler: slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})})
}

type handler struct{ slog.Handler }

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	if id := RequestID(ctx); id != "" {
		r.AddAttrs(slog.String("request_id", id))
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &handler{Handler: h.Handler.WithAttrs(attrs)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{Handler: h.Handler.WithGroup(name)}
}

// AtLeast returns a logger that drops records below min (used to quiet a
// library's informational logs unless codemode itself logs at debug level).
func AtLeast(l *slog.Logger, min slog.Level) *slog.Logger {
	return slog.New(&minLevel{Handler: l.Handler(), min: min})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

func (h *minLevel) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &minLevel{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{Handler: h.Handler.WithGroup(name), min: h.min}
}
