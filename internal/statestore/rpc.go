package statestore

import (
	"context"
	"errors"

	"github.com/codemode/codemode/internal/hostrpc"
	"github.com/go-json-experiment/json/jsontext"
)

// Register adds the memory and saved-tool handlers to mux. Each request uses
// the namespace of the caller's principal, so principals never share memory.
func (s *Store) Register(mux *hostrpc.Mux) {
	mux.Handle(hostrpc.MemorySave, handle(func(ns string, p params) (any, error) {
		saved, err := s.Save(ns, p.Key, orNull(p.Value), p.Version)
		return map[string]bool{"saved": saved}, err
	}))
	mux.Handle(hostrpc.MemoryLoad, handle(func(ns string, p params) (any, error) {
		v, version, found, err := s.Load(ns, p.Key)
		if err != nil || !found {
			return map[string]any{"found": false, "version": 0}, err
		}
		return map[string]any{"found": true, "value": jsontext.Value(v), "version": version}, nil
	}))
	mux.Handle(hostrpc.MemoryList, handle(func(ns string, _ params) (any, error) { return s.Keys(ns) }))
	mux.Handle(hostrpc.MemoryDelete, handle(func(ns string, p params) (any, error) { return s.Delete(ns, p.Key) }))
	mux.Handle(hostrpc.ToolSave, handle(func(ns string, p params) (any, error) {
		return nil, s.SaveTool(ns, Tool{Name: p.Name, Source: p.Source, Doc: p.Doc})
	}))
	mux.Handle(hostrpc.ToolList, handle(func(ns string, p params) (any, error) { return s.Tools(ns, p.Sources) }))
}

type params struct {
	Key     string         `json:"key"`
	Value   jsontext.Value `json:"value"`
	Version *int64         `json:"version"`
	Name    string         `json:"name"`
	Source  string         `json:"source"`
	Doc     string         `json:"doc"`
	Sources bool           `json:"sources"`
}

// handle decodes the parameters and gives errors caused by the request the
// kind the runtime raises as a usage error.
func handle(h func(ns string, p params) (any, error)) hostrpc.Handler {
	return func(_ context.Context, req *hostrpc.Request) (any, error) {
		var p params
		if err := hostrpc.Decode(req, &p); err != nil {
			return nil, err
		}
		res, err := h(req.Caller.Principal, p)
		if errors.Is(err, ErrUser) {
			return nil, &hostrpc.Error{Kind: hostrpc.KindInvalid, Message: err.Error()}
		}
		return res, err
	}
}

func orNull(v jsontext.Value) []byte {
	if len(v) == 0 {
		return []byte("null")
	}
	return v
}
