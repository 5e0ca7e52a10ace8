package console

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/codemode/codemode/internal/audit"
)

// AuditLog is the audit log the console reads.
type AuditLog struct {
	Path string
	// Sync writes out what the log still buffers (audit.Log.Sync).
	Sync func() error
}

// auditTail is how much of the end of the log is read for display.
const auditTail = 4 << 20

// AuditView is the audit page: the newest records that match, newest
// first, and whether the whole chain verifies.
type AuditView struct {
	Configured bool           `json:"configured"`
	Verified   bool           `json:"verified"`
	Status     string         `json:"status"`
	Records    []audit.Record `json:"records"`
}

// auditLog answers /api/audit?q=TEXT&limit=N: records the login may see
// (its own principal's; an admin's, all) whose principal, session, server,
// tool, decision, rule, outcome or reason contains every word of q.
func (c *Console) auditLog(w http.ResponseWriter, r *http.Request, l *login) {
	v := AuditView{Records: []audit.Record{}}
	a := c.opts.Audit
	if a == nil || a.Path == "" {
		writeJSON(w, v)
		return
	}
	v.Configured = true
	limit, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 200
	}
	if a.Sync != nil {
		if err := a.Sync(); err != nil {
			c.log.Warn("console: syncing the audit log", "error", err)
		}
	}
	rep, err := audit.VerifyFile(a.Path)
	switch {
	case err != nil:
		v.Status = err.Error()
	default:
		v.Verified, v.Status = rep.OK(), rep.String()
	}
	records, err := tailRecords(a.Path, auditTail)
	if err != nil {
		v.Status += "; " + err.Error()
	}
	words := strings.Fields(strings.ToLower(r.URL.Query().Get("q")))
	for _, rec := range slices.Backward(records) {
		if len(v.Records) == limit {
			break
		}
		if l.sees(rec.Principal) && matches(rec, words) {
			v.Records = append(v.Records, rec)
		}
	}
	writeJSON(w, v)
}

func matches(r audit.Record, words []string) bool {
	hay := strings.ToLower(strings.Join([]string{r.Kind, r.Principal, r.Session, r.Server, r.Tool, r.Decision, r.Rule, r.Outcome, r.Reason, r.Approver, r.Error}, " "))
	for _, w := range words {
		if !strings.Contains(hay, w) {
			return false
		}
	}
	return true
}

// tailRecords reads the records in the last tail bytes of the file at path,
// oldest first (a partial first line is skipped).
func tailRecords(path string, tail int64) ([]audit.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	start := max(fi.Size()-tail, 0)
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var out []audit.Record
	for first := true; sc.Scan(); first = false {
		line := bytes.TrimSpace(sc.Bytes())
		if first && start > 0 || len(line) == 0 {
			continue
		}
		var rec audit.Record
		if json.Unmarshal(line, &rec) == nil {
			out = append(out, rec)
		}
	}
	if err := sc.Err(); err != nil {
		return out, fmt.Errorf("audit log: %w", err)
	}
	return out, nil
}
