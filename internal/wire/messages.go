package wire

import (
	"fmt"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Message types sent by the host.
const (
	TypeBoot      = "boot"
	TypeExec      = "exec"
	TypeInterrupt = "interrupt"
	TypePing      = "ping"
	TypeRPCResult = "rpc_result"
)

// Message types sent by the sandbox.
const (
	TypeReady = "ready"
	TypeDone  = "done"
	TypePong  = "pong"
	TypeRPC   = "rpc"
)

// Boot is the first frame the host sends: the runtime's Python sources and
// its settings. The bootstrap passed on the interpreter's command line reads
// it, installs the modules and hands over to the runtime.
type Boot struct {
	Type    string            `json:"type"`
	Modules map[string]string `json:"modules"`  // dotted module name -> source
	Package []string          `json:"packages"` // names in Modules that are packages
	Entry   string            `json:"entry"`    // module whose main() takes over
	Config  jsontext.Value    `json:"config,omitempty"`
	// Preload lists modules the runtime imports before it reports ready.
	Preload []string `json:"preload,omitempty"`
	// Direct, when set, names the direct pipes (sandbox.Direct).
	Direct *DirectFDs `json:"direct,omitempty"`
}

// DirectFDs are the runtime's descriptors of the direct pipes: it writes
// the RPCs of a thread that waits for the answer to Requests, in frames as
// on the channel, and reads their results from Replies.
type DirectFDs struct {
	Requests int `json:"requests"`
	Replies  int `json:"replies"`
}

// Exec asks the runtime to run one cell of user code.
type Exec struct {
	Type     string `json:"type"`
	ID       uint64 `json:"id"`
	Code     string `json:"code"`
	Filename string `json:"filename"` // shown in tracebacks, e.g. "<cell-3>"
	// Loaded names the MCP servers loaded for this call (LOADED_MCP_SERVERS).
	Loaded []string `json:"loaded,omitempty"`
	// Files are written into /workspace before the cell runs (name -> base64).
	Files map[string]string `json:"files,omitempty"`
}

// Interrupt asks the runtime to raise KeyboardInterrupt in cell ID.
type Interrupt struct {
	Type string `json:"type"`
	ID   uint64 `json:"id"`
}

// Ping is answered by a Pong with the same ID; it measures the channel.
type Ping struct {
	Type string `json:"type"`
	ID   uint64 `json:"id"`
}

// RPCResult answers an RPC from the sandbox.
type RPCResult struct {
	Type   string         `json:"type"`
	ID     uint64         `json:"id"`
	OK     bool           `json:"ok"`
	Result jsontext.Value `json:"result,omitzero"` // omitzero: an empty list or object is a result
	Error  *RPCError      `json:"error,omitempty"`
}

// RPCError is the failure side of an RPCResult. Kind lets the runtime raise
// the right Python exception class.
type RPCError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
	Server  string `json:"server,omitempty"`
	Tool    string `json:"tool,omitempty"`
}

// Ready is the runtime's first message once it has booted.
type Ready struct {
	Type   string `json:"type"`
	Python string `json:"python"`
	PID    int    `json:"pid"`
}

// Cell outcomes reported in Done.Status.
const (
	StatusOK          = "ok"          // ran to the end
	StatusError       = "error"       // uncaught exception (traceback already on stderr)
	StatusExit        = "exit"        // SystemExit; ExitCode holds its code
	StatusInterrupted = "interrupted" // stopped by an Interrupt
)

// Done reports the end of cell ID. Every byte the cell wrote to its stdout
// and stderr has been sent before Done.
type Done struct {
	Type     string `json:"type"`
	ID       uint64 `json:"id"`
	Status   string `json:"status"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"` // last line of the traceback, e.g. "ValueError: boom"
}

// Pong answers a Ping.
type Pong struct {
	Type string `json:"type"`
	ID   uint64 `json:"id"`
}

// RPC is a request from sandboxed code to the host (tool calls, discovery).
type RPC struct {
	Type   string         `json:"type"`
	ID     uint64         `json:"id"`
	Method string         `json:"method"`
	Params jsontext.Value `json:"params,omitempty"`
}

// Marshal encodes a message.
func Marshal(msg any) ([]byte, error) {
	if res, ok := msg.(RPCResult); ok && res.Error == nil {
		return appendRPCResult(nil, res), nil
	}
	data, err := json.Marshal(msg, json.Deterministic(true))
	if err != nil {
		return nil, fmt.Errorf("wire: encoding %T: %w", msg, err)
	}
	return data, nil
}

// appendRPCResult encodes an answer without an error as json.Marshal
// would, with the result copied as it is: a handler's result is valid
// JSON already (hostrpc.Encoded, or encoded by the host), and a tool's
// result is its largest part, which Marshal would check and reformat
// again on every tool call.
func appendRPCResult(dst []byte, res RPCResult) []byte {
	dst = append(dst, `{"type":`...)
	dst, _ = jsontext.AppendQuote(dst, res.Type)
	dst = append(dst, `,"id":`...)
	dst = strconv.AppendUint(dst, res.ID, 10)
	dst = append(dst, `,"ok":`...)
	dst = strconv.AppendBool(dst, res.OK)
	if len(res.Result) > 0 {
		dst = append(dst, `,"result":`...)
		dst = append(dst, res.Result...)
	}
	return append(dst, '}')
}

// strict decoding: names are matched case-sensitively and duplicate or
// unknown members are rejected, so a payload cannot mean two things.
var strict = json.JoinOptions(json.RejectUnknownMembers(true))

// Unmarshal decodes data into v strictly.
func Unmarshal(data []byte, v any) error {
	return json.Unmarshal(data, v, strict)
}

// DecodeSandboxMessage decodes a message frame sent by the sandbox into
// *Ready, *Done, *Pong or *RPC.
func DecodeSandboxMessage(payload []byte) (any, error) {
	var head struct {
		Type string `json:"type"`
	}
	// The envelope pass tolerates the other members; the typed pass below is strict.
	if err := json.Unmarshal(payload, &head); err != nil {
		return nil, fmt.Errorf("wire: decoding message: %w", err)
	}
	var msg any
	switch head.Type {
	case TypeReady:
		msg = new(Ready)
	case TypeDone:
		msg = new(Done)
	case TypePong:
		msg = new(Pong)
	case TypeRPC:
		msg = new(RPC)
	default:
		return nil, fmt.Errorf("wire: unknown message type %q", head.Type)
	}
	if err := Unmarshal(payload, msg); err != nil {
		return nil, fmt.Errorf("wire: decoding %s message: %w", head.Type, err)
	}
	if rpc, ok := msg.(*RPC); ok {
		rpc.normalize()
	}
	return msg, nil
}

// DecodeRPC decodes a message frame that may only hold an RPC (the direct
// pipe's), as strictly as DecodeSandboxMessage but in one pass.
func DecodeRPC(payload []byte) (*RPC, error) {
	var m RPC
	if err := Unmarshal(payload, &m); err != nil {
		return nil, fmt.Errorf("wire: decoding an rpc message: %w", err)
	}
	if m.Type != TypeRPC {
		return nil, fmt.Errorf("wire: a message of type %q where only rpc may come", m.Type)
	}
	m.normalize()
	return &m, nil
}

// normalize makes absent and null params the same.
func (m *RPC) normalize() {
	if string(m.Params) == "null" {
		m.Params = nil
	}
}
