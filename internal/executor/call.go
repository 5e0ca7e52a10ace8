package executor

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/codemode/codemode/internal/artifacts"
	"github.com/codemode/codemode/internal/interpreter"
	"github.com/codemode/codemode/internal/render"
	"github.com/codemode/codemode/internal/statestore"
	"github.com/codemode/codemode/internal/wire"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// callState collects what one running call produces besides output.
type callState struct {
	mu       sync.Mutex
	images   []render.Image
	files    []render.File
	progress func(ProgressUpdate)
}

func (c *callState) addImage(img render.Image) {
	c.mu.Lock()
	c.images = append(c.images, img)
	c.mu.Unlock()
}

func (c *callState) addFile(f render.File) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, old := range c.files {
		if old.URI == f.URI {
			c.files[i] = f // written twice in one call: report it once
			return
		}
	}
	c.files = append(c.files, f)
}

// sessionRPC answers the runtime's own requests (images, files, progress,
// memory, saved tools, TOON) and passes the rest (MCP) to base.
// The session is looked up per request: a spare interpreter is bound to its
// session only when a session claims it.
func (m *Manager) sessionRPC(bound *atomic.Pointer[session], sandboxID string, base interpreter.RPCHandler) interpreter.RPCHandler {
	return func(ctx context.Context, method string, params jsontext.Value) (jsontext.Value, *wire.RPCError) {
		s := bound.Load()
		if s == nil {
			return nil, &wire.RPCError{Kind: "unavailable", Message: "the interpreter is not attached to a session yet"}
		}
		res, err := m.localRPC(s, sandboxID, method, params)
		if errors.Is(err, errNotLocal) {
			if base == nil {
				return nil, &wire.RPCError{Kind: "unavailable", Message: "no MCP servers are configured"}
			}
			return base(ctx, method, params)
		}
		if err != nil {
			kind := "error"
			if errors.Is(err, statestore.ErrUser) || errors.Is(err, errInvalid) {
				kind = "invalid"
			}
			return nil, &wire.RPCError{Kind: kind, Message: err.Error()}
		}
		data, merr := jsonv2.Marshal(res)
		if merr != nil {
			return nil, &wire.RPCError{Kind: "internal", Message: merr.Error()}
		}
		return data, nil
	}
}

var (
	errNotLocal = errors.New("not a runtime request")
	errInvalid  = errors.New("invalid request")
)

type localParams struct {
	Kind     string         `json:"kind"`
	MIME     string         `json:"mime"`
	Name     string         `json:"name"`
	Data     string         `json:"data"`
	Progress float64        `json:"progress"`
	Total    *float64       `json:"total"`
	Message  string         `json:"message"`
	Key      string         `json:"key"`
	Value    jsontext.Value `json:"value"`
	Version  *int64         `json:"version"`
	Source   string         `json:"source"`
	Doc      string         `json:"doc"`
	Sources  bool           `json:"sources"`
}

func (m *Manager) localRPC(s *session, sandboxID, method string, params jsontext.Value) (any, error) {
	switch method {
	case "artifact", "progress", "memory_save", "memory_load", "memory_list", "memory_delete", "tool_save", "tool_list", "to_toon":
	default:
		return nil, errNotLocal
	}
	var p localParams
	if len(params) > 0 {
		if err := jsonv2.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("%w: %v", errInvalid, err)
		}
	}
	ns := s.principal
	switch method {
	case "artifact":
		call := s.currentCall()
		if call == nil {
			return nil, fmt.Errorf("%w: images and files can only be returned while a call runs", errInvalid)
		}
		data, err := base64.StdEncoding.DecodeString(p.Data)
		if err != nil {
			return nil, fmt.Errorf("%w: artifact data is not base64", errInvalid)
		}
		switch p.Kind {
		case "image":
			img, err := artifacts.FitImage(data, m.opts.Images)
			if err != nil {
				return nil, fmt.Errorf("%w: show_image: %v", errInvalid, err)
			}
			call.addImage(render.Image{MIMEType: img.MIMEType, Width: img.Width, Height: img.Height, Bytes: img.Bytes,
				Downscaled: img.Downscaled, Name: p.Name, Data: img.Data})
			return map[string]any{"width": img.Width, "height": img.Height}, nil
		case "file":
			if m.opts.Artifacts == nil {
				return nil, fmt.Errorf("%w: returning files is disabled", errInvalid)
			}
			f, err := m.opts.Artifacts.Put(sandboxID, s.key.owner, "out/"+p.Name, data)
			if err != nil {
				return nil, fmt.Errorf("%w: publish: %v", errInvalid, err)
			}
			call.addFile(render.File{URI: f.URI, Name: p.Name, MIMEType: f.MIMEType, Size: f.Size})
			return map[string]any{"uri": f.URI}, nil
		}
		return nil, fmt.Errorf("%w: unknown artifact kind %q", errInvalid, p.Kind)
	case "progress":
		if call := s.currentCall(); call != nil && call.progress != nil {
			total := 0.0
			if p.Total != nil {
				total = *p.Total
			}
			call.progress(ProgressUpdate{Progress: p.Progress, Total: total, Message: p.Message, FromCode: true})
		}
		return nil, nil
	case "to_toon":
		if m.opts.TOON == nil {
			return nil, fmt.Errorf("%w: TOON encoding is not available", errInvalid)
		}
		return m.opts.TOON(p.Value)
	}
	if m.opts.State == nil {
		return nil, fmt.Errorf("%w: memory and saved tools are disabled (no state directory)", errInvalid)
	}
	switch method {
	case "memory_save":
		saved, err := m.opts.State.Save(ns, p.Key, json(p.Value), p.Version)
		return map[string]bool{"saved": saved}, err
	case "memory_load":
		v, version, found, err := m.opts.State.Load(ns, p.Key)
		if err != nil || !found {
			return map[string]any{"found": false, "version": 0}, err
		}
		return map[string]any{"found": true, "value": jsontext.Value(v), "version": version}, nil
	case "memory_list":
		return m.opts.State.Keys(ns)
	case "memory_delete":
		return m.opts.State.Delete(ns, p.Key)
	case "tool_save":
		return nil, m.opts.State.SaveTool(ns, statestore.Tool{Name: p.Name, Source: p.Source, Doc: p.Doc})
	case "tool_list":
		return m.opts.State.Tools(ns, p.Sources)
	}
	return nil, errNotLocal
}

func json(v jsontext.Value) []byte {
	if len(v) == 0 {
		return []byte("null")
	}
	return v
}
