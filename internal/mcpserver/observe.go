package mcpserver

import (
	"context"

	"github.com/codemode/codemode/internal/render"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Observer traces and measures run_python calls (telemetry implements it).
type Observer interface {
	// StartRunPython begins observing a call; the returned context carries
	// its span, and end receives the result's status.
	StartRunPython(ctx context.Context, req *mcp.CallToolRequest) (_ context.Context, end func(status string))
}

// observed wraps the run_python handler with the Observer.
func (s *Server) observed(h mcp.ToolHandler) mcp.ToolHandler {
	if s.opts.Observer == nil {
		return h
	}
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, end := s.opts.Observer.StartRunPython(ctx, req)
		res, err := h(ctx, req)
		status := "error"
		if res != nil {
			if st, ok := res.StructuredContent.(render.Structured); ok {
				status = st.Status
			}
		}
		end(status)
		return res, err
	}
}
