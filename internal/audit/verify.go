package audit

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/go-json-experiment/json"
)

// Report is the outcome of verifying a chain.
type Report struct {
	Files    []string // verified, oldest first
	Records  int      // records that verified, up to Problem if any
	FirstSeq uint64
	LastSeq  uint64
	// Genesis says the chain starts at the first record ever (prev all
	// zeros). Without it the oldest file continues one rotated away, and
	// what came before cannot be checked.
	Genesis bool
	// Head is the hash of the last verified line, the prev of the record
	// that follows it. Records cut from the end, or a rewritten last line,
	// show only against a Head kept elsewhere.
	Head    string
	Problem *Problem // the first break in the chain; nil if it holds
}

// Problem locates the first line that breaks the chain.
type Problem struct {
	File   string
	Line   int // 1-based, in File
	Reason string
}

func (p *Problem) Error() string {
	return fmt.Sprintf("%s:%d: %s", p.File, p.Line, p.Reason)
}

// OK reports whether the chain holds.
func (r Report) OK() bool { return r.Problem == nil }

// Err returns the Problem as an error, nil if the chain holds.
func (r Report) Err() error {
	if r.Problem == nil {
		return nil
	}
	return r.Problem
}

// String is the one-line verdict `codemode audit verify` prints: the first
// bad line, as "file:line: reason", or a summary of what verified.
func (r Report) String() string {
	if r.Problem != nil {
		return r.Problem.Error()
	}
	if r.Records == 0 {
		return fmt.Sprintf("ok: no records in %d file(s)", len(r.Files))
	}
	start := "the first record ever"
	if !r.Genesis {
		start = fmt.Sprintf("seq %d (earlier records rotated away, not verified)", r.FirstSeq)
	}
	return fmt.Sprintf("ok: %d records, seq %d..%d, %d file(s), chain starts at %s; head %s",
		r.Records, r.FirstSeq, r.LastSeq, len(r.Files), start, r.Head)
}

// VerifyFile verifies the log at path together with its rotated files,
// oldest (highest N of path.N) first.
func VerifyFile(path string) (Report, error) {
	nums, err := rotated(path)
	if err != nil {
		return Report{}, fmt.Errorf("audit: verify %s: %w", path, err)
	}
	var files []string
	for i := len(nums) - 1; i >= 0; i-- {
		files = append(files, rotatedName(path, nums[i]))
	}
	switch _, err := os.Stat(path); {
	case err == nil:
		files = append(files, path)
	case !errors.Is(err, fs.ErrNotExist):
		return Report{}, fmt.Errorf("audit: verify %s: %w", path, err)
	}
	if len(files) == 0 {
		return Report{}, fmt.Errorf("audit: verify %s: %w", path, fs.ErrNotExist)
	}
	return Verify(files...)
}

// Verify checks that paths, oldest first, hold one unbroken chain: every
// line a record, each record's prev the hash of the line before it, seq
// rising by one. The error is for files that cannot be read; a broken chain
// is Report.Problem.
func Verify(paths ...string) (Report, error) {
	if len(paths) == 0 {
		return Report{}, errors.New("audit: verify: no files")
	}
	c := chain{report: Report{Files: paths}}
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return c.report, fmt.Errorf("audit: verify: %w", err)
		}
		err = c.read(p, f)
		f.Close()
		if err != nil {
			return c.report, fmt.Errorf("audit: verify %s: %w", p, err)
		}
		if c.report.Problem != nil {
			break
		}
	}
	return c.report, nil
}

// chain follows records through one or more files.
type chain struct {
	report   Report
	lastFile string // where the last verified record is
	lastLine int
}

// read feeds the lines of one file to the chain, stopping at the first
// problem.
func (c *chain) read(name string, r io.Reader) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err == io.EOF {
			if len(line) > 0 {
				c.report.Problem = &Problem{name, n, "last record has no newline: truncated"}
			}
			return nil
		}
		if err != nil {
			return err
		}
		if !c.add(name, n, line[:len(line)-1]) {
			return nil
		}
	}
}

// add checks one line against the chain so far; false if it breaks it.
func (c *chain) add(name string, n int, line []byte) bool {
	fail := func(format string, args ...any) bool {
		c.report.Problem = &Problem{name, n, fmt.Sprintf(format, args...)}
		return false
	}
	rec, err := parseLine(line)
	if err != nil {
		return fail("not a valid record (%v): edited or corrupted", err)
	}
	r := &c.report
	if r.Records == 0 {
		if rec.Prev == genesis && rec.Seq != 1 {
			return fail("first record (prev all zeros) has seq %d, want 1: edited", rec.Seq)
		}
		r.Genesis = rec.Prev == genesis
		r.FirstSeq = rec.Seq
	} else {
		after := fmt.Sprintf("line %d", c.lastLine)
		if c.lastFile != name {
			after = fmt.Sprintf("%s:%d", c.lastFile, c.lastLine)
		}
		want := r.LastSeq + 1
		switch {
		case rec.Prev != r.Head && rec.Seq == want:
			return fail("record does not follow %s (prev hash mismatch): edited, removed or reordered", after)
		case rec.Prev != r.Head && rec.Seq > want:
			return fail("record does not follow %s (prev hash mismatch, seq %d after %d): removed or reordered", after, rec.Seq, r.LastSeq)
		case rec.Prev != r.Head:
			return fail("record does not follow %s (prev hash mismatch, seq %d after %d): reordered or duplicated", after, rec.Seq, r.LastSeq)
		case rec.Seq != want:
			// The writer numbers a record one past the one it hashed.
			return fail("seq %d after %d at %s though prev matches: edited", rec.Seq, r.LastSeq, after)
		}
	}
	sum := sha256.Sum256(line)
	r.Head = hex.EncodeToString(sum[:])
	r.LastSeq = rec.Seq
	r.Records++
	c.lastFile, c.lastLine = name, n
	return true
}

// parseLine decodes one line (without its newline) and checks the fields
// the chain relies on. Unknown members are allowed so older verifiers read
// newer logs; duplicate names and invalid UTF-8 are not.
func parseLine(line []byte) (Record, error) {
	var r Record
	if err := json.Unmarshal(line, &r); err != nil {
		return r, err
	}
	if r.Seq == 0 {
		return r, errors.New("no seq")
	}
	if !isHexDigest(r.Prev) {
		return r, errors.New("prev is not a hex SHA-256")
	}
	return r, nil
}
