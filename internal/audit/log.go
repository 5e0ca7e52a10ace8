package audit

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	"golang.org/x/sys/unix"
)

// Defaults for zero Options.
const (
	DefaultMaxFiles      = 5
	DefaultFlushInterval = 100 * time.Millisecond
)

// ErrClosed is returned by Append and Sync after Close.
var ErrClosed = errors.New("audit: log closed")

// Options tune a Log. The zero value never rotates.
type Options struct {
	// MaxBytes rotates the file before a record would take it past this
	// size; 0 never rotates.
	MaxBytes int64
	// MaxFiles is how many rotated files (path.1 … path.MaxFiles) are kept;
	// 0 means DefaultMaxFiles.
	MaxFiles int
	// FlushInterval is how long a record may wait in memory before it is
	// written and fsynced; 0 means DefaultFlushInterval. Sync and Close
	// write at once.
	FlushInterval time.Duration
	// Logger reports what cannot be returned (a failed background flush, a
	// torn record dropped on Open); nil discards.
	Logger *slog.Logger
}

// Log appends records to the chain. It is safe for concurrent use, and a
// nil *Log accepts and drops everything, so an unconfigured audit log needs
// no checks at call sites.
type Log struct {
	path string
	opts Options
	log  *slog.Logger
	lock *os.File // flock held while open: two writers would fork the chain

	// syncMu orders Syncs so one never returns before the fsync covering
	// its records has finished; taken before mu, never while holding it.
	syncMu sync.Mutex

	mu     sync.Mutex
	f      *os.File
	w      *bufio.Writer
	size   int64                 // bytes in f, buffered ones included
	seq    uint64                // of the last record
	prev   [2 * sha256.Size]byte // hex hash of the last line: the next record's prev
	line   []byte                // scratch for building a line
	dirty  bool                  // written since the last fsync
	err    error                 // sticky: after a failed write the tail is unknown
	closed bool

	stop chan struct{}
	done chan struct{}
}

// Open opens the log at path for appending, creating it if needed, and
// continues the chain from its last record (or from path.1's when path is
// empty or missing, as after a crash mid-rotation). A final line without
// its newline, torn by a crash, is dropped. Only one Log may have path
// open at a time, across processes (flock on path + ".lock").
func Open(path string, opts Options) (*Log, error) {
	if opts.MaxBytes < 0 || opts.MaxFiles < 0 || opts.FlushInterval < 0 {
		return nil, fmt.Errorf("audit: open %s: negative option", path)
	}
	if opts.MaxFiles == 0 {
		opts.MaxFiles = DefaultMaxFiles
	}
	if opts.FlushInterval == 0 {
		opts.FlushInterval = DefaultFlushInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	lock, err := lockFile(path + ".lock")
	if err != nil {
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	l := &Log{
		path: path,
		opts: opts,
		log:  opts.Logger,
		lock: lock,
		f:    f,
		w:    bufio.NewWriterSize(f, 64<<10),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	// The directory sync makes a newly created file's name durable too.
	if err := errors.Join(l.resume(), syncDir(filepath.Dir(path))); err != nil {
		f.Close()
		lock.Close()
		return nil, fmt.Errorf("audit: open %s: %w", path, err)
	}
	go l.flusher()
	return l, nil
}

func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is held by another writer of this log", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}

// resume finds where the chain stands: seq and hash of the last record.
func (l *Log) resume() error {
	st, err := l.f.Stat()
	if err != nil {
		return err
	}
	line, end, err := lastLine(l.f, st.Size())
	if err != nil {
		return err
	}
	if end < st.Size() {
		// Records are written whole, so a line without its newline is one
		// a crash cut short; it never became part of the chain.
		l.log.Warn("audit: dropping incomplete last record", "file", l.path, "bytes", st.Size()-end)
		if err := l.f.Truncate(end); err != nil {
			return fmt.Errorf("drop incomplete last record: %w", err)
		}
	}
	l.size = end
	from := l.path
	if line == nil {
		from = l.path + ".1"
		line, err = lastRotated(from)
		if err != nil {
			return err
		}
		if line == nil {
			hex.Encode(l.prev[:], make([]byte, sha256.Size))
			return nil
		}
	}
	rec, err := parseLine(line)
	if err != nil {
		return fmt.Errorf("last record of %s: %w (codemode audit verify shows where the chain breaks)", from, err)
	}
	l.seq = rec.Seq
	sum := sha256.Sum256(line)
	hex.Encode(l.prev[:], sum[:])
	return nil
}

// lastRotated returns the last line of the newest rotated file, nil if
// there is none.
func lastRotated(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	line, end, err := lastLine(f, st.Size())
	if err != nil {
		return nil, err
	}
	// Rotation syncs a file before renaming it, so it ends whole.
	if line == nil || end < st.Size() {
		return nil, fmt.Errorf("%s does not end with a complete record", path)
	}
	return line, nil
}

// lastLine returns the last newline-terminated line in r[0:size] without
// its newline (nil if none) and the offset just past that newline.
func lastLine(r io.ReaderAt, size int64) (line []byte, end int64, err error) {
	nl, err := lastIndexByte(r, size, '\n')
	if err != nil || nl < 0 {
		return nil, 0, err
	}
	start, err := lastIndexByte(r, nl, '\n')
	if err != nil {
		return nil, 0, err
	}
	line = make([]byte, nl-(start+1))
	if _, err := r.ReadAt(line, start+1); err != nil {
		return nil, 0, err
	}
	return line, nl + 1, nil
}

// lastIndexByte is bytes.LastIndexByte over r[0:end], read backwards in
// chunks so a long log is not read whole.
func lastIndexByte(r io.ReaderAt, end int64, c byte) (int64, error) {
	buf := make([]byte, 32<<10)
	for end > 0 {
		n := min(end, int64(len(buf)))
		off := end - n
		if _, err := r.ReadAt(buf[:n], off); err != nil {
			return -1, err
		}
		if i := bytes.LastIndexByte(buf[:n], c); i >= 0 {
			return off + int64(i), nil
		}
		end = off
	}
	return -1, nil
}

// Append adds r to the chain, filling Seq and Prev, and Time when it is
// zero. The record is durable after the next flush (FlushInterval), Sync or
// Close. ctx is not consulted: a cancelled call's record must still be
// written. After a write error every Append returns that error.
func (l *Log) Append(ctx context.Context, r Record) error {
	if l == nil {
		return nil
	}
	body, err := encode(r)
	if err != nil {
		return fmt.Errorf("audit: append: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if l.err != nil {
		return l.err
	}
	// Seq and prev are spliced in under the lock; the rest was encoded
	// outside it, so concurrent callers only serialise on hashing.
	b := append(l.line[:0], `{"seq":`...)
	b = strconv.AppendUint(b, l.seq+1, 10)
	b = append(b, ',')
	b = append(b, body[1:len(body)-1]...)
	b = append(b, `,"prev":"`...)
	b = append(b, l.prev[:]...)
	b = append(b, `"}`...)
	sum := sha256.Sum256(b)
	b = append(b, '\n')
	l.line = b
	if l.opts.MaxBytes > 0 && l.size > 0 && l.size+int64(len(b)) > l.opts.MaxBytes {
		if err := l.rotate(); err != nil {
			l.err = fmt.Errorf("audit: rotate %s: %w", l.path, err)
			return l.err
		}
	}
	if _, err := l.w.Write(b); err != nil {
		l.err = fmt.Errorf("audit: write %s: %w", l.path, err)
		return l.err
	}
	l.size += int64(len(b))
	l.seq++
	hex.Encode(l.prev[:], sum[:])
	l.dirty = true
	return nil
}

// encode checks r and returns its JSON object without seq and prev.
func encode(r Record) ([]byte, error) {
	if err := r.check(); err != nil {
		return nil, err
	}
	if r.Time.IsZero() {
		r.Time = time.Now()
	}
	r.Time = r.Time.UTC()
	r.Seq, r.Prev = 0, ""
	// Invalid UTF-8 in an upstream's error text becomes U+FFFD rather than
	// costing the record.
	return json.Marshal(r, jsontext.AllowInvalidUTF8(true))
}

// rotate moves path to path.1 (shifting older ones up, dropping beyond
// MaxFiles) and starts an empty path. The chain itself is untouched: the
// next record's prev is the hash of the last line of path.1.
func (l *Log) rotate() error {
	if err := l.w.Flush(); err != nil {
		return err
	}
	if err := l.f.Sync(); err != nil {
		return err
	}
	// A concurrent Sync holding the old file gets ErrClosed, which it takes
	// as done: this Sync covered its records.
	if err := l.f.Close(); err != nil {
		return err
	}
	l.dirty = false
	if err := shift(l.path, l.opts.MaxFiles); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	l.f = f
	l.w.Reset(f)
	l.size = 0
	return syncDir(filepath.Dir(l.path))
}

// shift renames path.N to path.N+1 for N < maxFiles, removes the rest and
// renames path to path.1.
func shift(path string, maxFiles int) error {
	nums, err := rotated(path)
	if err != nil {
		return err
	}
	for _, n := range nums {
		if n >= maxFiles {
			if err := os.Remove(rotatedName(path, n)); err != nil {
				return err
			}
		}
	}
	for n := maxFiles - 1; n >= 1; n-- {
		err := os.Rename(rotatedName(path, n), rotatedName(path, n+1))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return os.Rename(path, rotatedName(path, 1))
}

func rotatedName(path string, n int) string {
	return path + "." + strconv.Itoa(n)
}

// rotated lists the N of the existing path.N files, ascending.
func rotated(path string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	prefix := filepath.Base(path) + "."
	var nums []int
	for _, e := range entries {
		suffix, ok := strings.CutPrefix(e.Name(), prefix)
		if !ok || suffix == "" || suffix[0] == '0' || strings.Trim(suffix, "0123456789") != "" {
			continue
		}
		if n, err := strconv.Atoi(suffix); err == nil {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Sync writes buffered records and fsyncs them.
func (l *Log) Sync() error {
	if l == nil {
		return nil
	}
	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return ErrClosed
	}
	if l.err != nil || !l.dirty {
		err := l.err
		l.mu.Unlock()
		return err
	}
	if err := l.w.Flush(); err != nil {
		l.err = fmt.Errorf("audit: write %s: %w", l.path, err)
		l.mu.Unlock()
		return l.err
	}
	f := l.f
	l.dirty = false
	l.mu.Unlock()
	// fsync outside mu so appends go on meanwhile. ErrClosed means a
	// rotation synced and closed f in between.
	if err := f.Sync(); err != nil && !errors.Is(err, os.ErrClosed) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.err = fmt.Errorf("audit: sync %s: %w", l.path, err)
		return l.err
	}
	return nil
}

// flusher syncs every FlushInterval until Close.
func (l *Log) flusher() {
	defer close(l.done)
	t := time.NewTicker(l.opts.FlushInterval)
	defer t.Stop()
	reported := false
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			if err := l.Sync(); err != nil && !errors.Is(err, ErrClosed) && !reported {
				l.log.Error("audit: log write failed; further records are refused", "file", l.path, "err", err)
				reported = true
			}
		}
	}
}

// Close writes and fsyncs what is buffered and releases the file. It
// returns the write error that stopped the log, if one did.
func (l *Log) Close() error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done

	l.syncMu.Lock()
	defer l.syncMu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	errs := []error{l.err}
	if l.err == nil {
		if err := l.w.Flush(); err != nil {
			errs = append(errs, fmt.Errorf("audit: write %s: %w", l.path, err))
		} else if err := l.f.Sync(); err != nil {
			errs = append(errs, fmt.Errorf("audit: sync %s: %w", l.path, err))
		}
	}
	if err := l.f.Close(); err != nil && !errors.Is(err, os.ErrClosed) {
		errs = append(errs, fmt.Errorf("audit: close %s: %w", l.path, err))
	}
	l.lock.Close()
	return errors.Join(errs...)
}
