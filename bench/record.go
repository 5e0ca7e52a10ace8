package main

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireMsg is one JSON-RPC message as it crossed the wire.
type wireMsg struct {
	out    bool   // client to server
	method string // requests and notifications
	id     string
	data   []byte          // the whole message
	params json.RawMessage // requests
	result json.RawMessage // responses
}

// recorder keeps the messages of a connection.
type recorder struct {
	mu   sync.Mutex
	msgs []wireMsg
}

func (r *recorder) add(out bool, m jsonrpc.Message) {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return
	}
	w := wireMsg{out: out, data: data}
	switch v := m.(type) {
	case *jsonrpc.Request:
		w.method, w.params = v.Method, v.Params
		if v.ID.IsValid() {
			w.id = idString(v.ID)
		}
	case *jsonrpc.Response:
		w.id, w.result = idString(v.ID), v.Result
	}
	r.mu.Lock()
	r.msgs = append(r.msgs, w)
	r.mu.Unlock()
}

func idString(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// take returns the messages recorded since the last take.
func (r *recorder) take() []wireMsg {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.msgs
	r.msgs = nil
	return out
}

// exchange is one request with its response.
type exchange struct {
	req, resp wireMsg
}

// exchanges pairs the client's requests of a method with their responses.
func exchanges(msgs []wireMsg, method string) []exchange {
	var out []exchange
	byID := map[string]wireMsg{}
	for _, m := range msgs {
		if !m.out && m.method == "" {
			byID[m.id] = m
		}
	}
	for _, m := range msgs {
		if m.out && m.method == method {
			out = append(out, exchange{req: m, resp: byID[m.id]})
		}
	}
	return out
}

// recordingTransport records every message of the connections it makes.
type recordingTransport struct {
	inner mcp.Transport
	rec   *recorder
}

func (t *recordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &recordingConn{Connection: c, rec: t.rec}, nil
}

type recordingConn struct {
	mcp.Connection
	rec *recorder
}

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.rec.add(false, m)
	}
	return m, err
}

func (c *recordingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if err == nil {
		c.rec.add(true, m)
	}
	return err
}
