package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/codemode/codemode/internal/downstream"
	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/go-json-experiment/json"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// Attributes of codemode's own, beside the MCP semantic conventions.
const (
	attrServer    = attribute.Key("codemode.server")
	attrOutcome   = attribute.Key("codemode.outcome")
	attrCode      = attribute.Key("codemode.code")
	attrArguments = attribute.Key("codemode.arguments")
	attrStatus    = attribute.Key("codemode.status")
)

// propagator is W3C trace context, the one MCP's _meta carries.
var propagator propagation.TraceContext

// metaCarrier reads and writes trace context in an MCP _meta object.
type metaCarrier mcp.Meta

func (c metaCarrier) Get(key string) string {
	v, _ := c[key].(string)
	return v
}

func (c metaCarrier) Set(key, value string) { c[key] = value }

func (c metaCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// StartRunPython begins the SERVER span of a run_python call, a child of
// the client's traceparent in params._meta when it sent one; end records
// the result's status (implements mcpserver.Observer).
func (t *Telemetry) StartRunPython(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func(status string)) {
	start := time.Now()
	attrs := []attribute.KeyValue{semconv.McpMethodNameToolsCall, semconv.GenAIToolName("run_python"), semconv.GenAIOperationNameExecuteTool}
	if req.Params != nil {
		if meta := req.Params.GetMeta(); len(meta) > 0 {
			ctx = propagator.Extract(ctx, metaCarrier(meta))
		}
		if t.content {
			var args struct {
				Code string `json:"code"`
			}
			if json.Unmarshal(req.Params.Arguments, &args) == nil {
				attrs = append(attrs, attrCode.String(args.Code))
			}
		}
	}
	if req.Session != nil && req.Session.ID() != "" {
		attrs = append(attrs, semconv.McpSessionID(req.Session.ID()))
	}
	ctx, span := t.tracer.Start(ctx, "tools/call run_python", trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, func(status string) {
		if status == "" {
			status = "unknown"
		}
		t.m.runCalls.WithLabelValues(status).Inc()
		t.m.runDuration.Observe(time.Since(start).Seconds())
		span.SetAttributes(attrStatus.String(status))
		if status != "success" {
			span.SetAttributes(semconv.ErrorTypeKey.String(status))
			span.SetStatus(codes.Error, status)
		}
		span.End()
	}
}

// ToolMiddleware traces, counts and logs every tool call made from code: a
// CLIENT span "tools/call <tool>" (whose context the downstream pool passes
// on), codemode_tool_calls_total and the duration histogram, and an info
// record with the outcome. Place it outermost so denied calls count too.
func (t *Telemetry) ToolMiddleware(next hostrpc.ToolCaller) hostrpc.ToolCaller {
	return func(ctx context.Context, call *hostrpc.ToolCall) (any, error) {
		attrs := []attribute.KeyValue{semconv.McpMethodNameToolsCall, semconv.GenAIToolName(call.Tool), attrServer.String(call.Server)}
		if t.content {
			if args, err := json.Marshal(call.Arguments); err == nil {
				attrs = append(attrs, attrArguments.String(string(args)))
			}
		}
		ctx, span := t.tracer.Start(ctx, "tools/call "+call.Tool, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
		start := time.Now()
		res, err := next(ctx, call)
		d := time.Since(start)
		outcome := outcomeOf(res, err)
		t.m.toolCalls.WithLabelValues(call.Server, t.toolLabel(call.Server, call.Tool), outcome).Inc()
		t.m.toolDuration.WithLabelValues(call.Server).Observe(d.Seconds())
		span.SetAttributes(attrOutcome.String(outcome))
		if outcome != "ok" {
			span.SetAttributes(semconv.ErrorTypeKey.String(outcome))
			span.SetStatus(codes.Error, outcome)
		}
		span.End()
		// Debug, not info: code makes tool calls in loops, and a line per call
		// costs more than the call's own overhead (the run_python line at info
		// counts them; metrics and spans keep each one).
		t.log.DebugContext(ctx, "tool call", "server", call.Server, "tool", call.Tool, "outcome", outcome, "duration", d,
			"arguments", call.Arguments)
		return res, err
	}
}

// outcomeOf names how a call ended, from a fixed set: ok, tool_error (the
// tool answered isError), an error kind of the gate or the pool (denied,
// limit, timeout, crashed, ...), or error.
func outcomeOf(res any, err error) string {
	var he *hostrpc.Error
	var de *downstream.Error
	switch {
	case err == nil:
		if r, ok := res.(downstream.Result); ok && r.IsError() {
			return "tool_error"
		}
		return "ok"
	case errors.As(err, &he):
		return he.Kind
	case errors.As(err, &de):
		return de.Kind
	}
	return "error"
}
