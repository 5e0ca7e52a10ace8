// Package audit keeps a tamper-evident log of the policy decisions and MCP
// tool calls made by sandboxed code. It is one JSON object per line, and
// each line carries in "prev" the SHA-256 of the line before it (across
// rotated files too), so editing, removing, inserting or reordering any
// record breaks the chain at the line that follows it. Verifying needs
// nothing but the files: no key, no index.
//
// A hash chain cannot show that records were cut from its end, or that the
// very last line was rewritten; [Report.Head] is the value to anchor
// elsewhere (a ticket, another host) when that matters.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	stdjson "encoding/json"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Record kinds.
const (
	KindDecision = "decision" // the policy decided on a call
	KindCall     = "call"     // a call completed (or was refused)
	KindAdd      = "add"      // code asked to add a server from a catalog (Server is the entry's name)
	KindEgress   = "egress"   // a network request from a sandbox (Server "net", Tool the host)
)

// Policy decisions.
const (
	DecisionAllow = "allow"
	DecisionDeny  = "deny"
	DecisionAsk   = "ask"
)

// Common call outcomes; others are allowed.
const (
	OutcomeOK     = "ok"
	OutcomeError  = "error"
	OutcomeDenied = "denied"
	OutcomeLimit  = "limit"
)

// Record is one line of the log. Append fills Seq and Prev (and Time when
// zero); callers set the rest. Fields are in line order.
type Record struct {
	Seq        uint64         `json:"seq,omitzero"` // 1 for the first record ever, then +1 per record across rotation
	Time       time.Time      `json:"time"`         // UTC, RFC 3339 with nanoseconds
	Kind       string         `json:"kind"`         // KindDecision, KindCall, KindAdd or KindEgress
	Principal  string         `json:"principal,omitempty"`
	Session    string         `json:"session,omitempty"`
	CallID     string         `json:"call_id,omitempty"` // ties a decision to its call
	Server     string         `json:"server,omitempty"`
	Tool       string         `json:"tool,omitempty"`
	Args       jsontext.Value `json:"args,omitzero"`         // the call's arguments, a JSON object
	ArgsSHA256 string         `json:"args_sha256,omitempty"` // ArgsDigest of them instead, when the rule redacts
	Decision   string         `json:"decision,omitempty"`    // allow, deny or ask
	Rule       string         `json:"rule,omitempty"`        // e.g. "rules[2]" or "default"
	Reason     string         `json:"reason,omitempty"`
	Approver   string         `json:"approver,omitempty"` // who answered an ask, e.g. "client:claude-code"
	Outcome    string         `json:"outcome,omitempty"`  // for calls: ok, error, denied, limit, ...
	Error      string         `json:"error,omitempty"`
	DurationMS int64          `json:"duration_ms,omitzero"`
	BytesIn    int64          `json:"bytes_in,omitzero"`  // egress: received from the host
	BytesOut   int64          `json:"bytes_out,omitzero"` // egress: sent to the host
	Prev       string         `json:"prev,omitzero"`      // hex SHA-256 of the previous line (without its newline)
}

// genesis is the prev of the first record ever.
const genesis = "0000000000000000000000000000000000000000000000000000000000000000"

// check reports what makes r unfit to be written.
func (r *Record) check() error {
	switch r.Kind {
	case KindDecision, KindAdd, KindEgress:
		switch r.Decision {
		case DecisionAllow, DecisionDeny, DecisionAsk:
		default:
			return fmt.Errorf("decision %q, want allow, deny or ask", r.Decision)
		}
	case KindCall:
	default:
		return fmt.Errorf("kind %q, want %q, %q, %q or %q", r.Kind, KindDecision, KindCall, KindAdd, KindEgress)
	}
	if len(r.Args) > 0 {
		if r.ArgsSHA256 != "" {
			// Both set is a redaction that forgot to drop the arguments.
			return fmt.Errorf("both args and args_sha256 set")
		}
		if !r.Args.IsValid() || r.Args.Kind() != '{' {
			return fmt.Errorf("args is not a JSON object")
		}
	}
	if r.ArgsSHA256 != "" && !isHexDigest(r.ArgsSHA256) {
		return fmt.Errorf("args_sha256 %q is not a hex SHA-256", r.ArgsSHA256)
	}
	return nil
}

// ArgsDigest returns the hex SHA-256 of the canonical JSON of a call's
// arguments, for args_sha256: object members sorted, no insignificant
// whitespace, strings and floats as RFC 8785 (JCS) writes them. Integers
// keep their digits, unlike JCS, so distinct large integers never share a
// digest. args is raw JSON ([]byte, [jsontext.Value] or
// encoding/json.RawMessage) or any value to marshal, such as a map.
func ArgsDigest(args any) (string, error) {
	var v jsontext.Value
	switch a := args.(type) {
	case jsontext.Value:
		v = a.Clone()
	case []byte:
		v = jsontext.Value(a).Clone()
	case stdjson.RawMessage:
		v = jsontext.Value(a).Clone()
	default:
		b, err := json.Marshal(a)
		if err != nil {
			return "", fmt.Errorf("audit: args digest: %w", err)
		}
		v = b
	}
	if err := v.Canonicalize(jsontext.CanonicalizeRawInts(false)); err != nil {
		return "", fmt.Errorf("audit: args digest: %w", err)
	}
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:]), nil
}

func isHexDigest(s string) bool {
	if len(s) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
