package executor

import (
	"context"

	"github.com/codemode/codemode/internal/sandbox"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Span attributes of a call's steps.
const (
	attrSession = attribute.Key("codemode.session")
	attrSandbox = attribute.Key("codemode.sandbox.id")
	attrBackend = attribute.Key("codemode.sandbox.backend")
	attrSource  = attribute.Key("codemode.sandbox.source") // spare or cold
	attrStatus  = attribute.Key("codemode.status")
)

// tracer is the tracer of the span in ctx (the run_python span), so the
// executor records its steps only when the call is traced, with no tracer
// of its own to configure.
func tracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer("github.com/codemode/codemode/internal/executor")
}

func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// exitCause names why a sandbox that died ended.
func exitCause(exit sandbox.Exit, killed bool) string {
	switch {
	case exit.OOMKilled:
		return ExitOOM
	case killed:
		return ExitTimeoutKill
	}
	return ExitCrash
}

func (m *Manager) exited(cause string) {
	if cause != "" && m.opts.Observer != nil {
		m.opts.Observer.SandboxExited(cause)
	}
}
