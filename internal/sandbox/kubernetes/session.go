package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/codemode/codemode/internal/sandbox"
)

// How long a session whose connection was lost without a word from the
// keeper waits for the Pod to end before it reports itself detached.
const lostGrace = 5 * time.Second

// activityEvery bounds how often the last-active annotation is patched
// while frames flow.
const activityEvery = time.Minute

// ActivityLag is how far a Pod's last-active record may trail its last
// use: an idle expiry shorter than it would end sessions in use.
const ActivityLag = 2 * activityEvery

// session is one connection to a sandbox Pod. Stderr is the Pod's log
// (the command's stderr and the keeper's messages), followed from the
// start for a new Pod and from the reattach on for a reattached one; the
// exec's own stderr (the connector's) goes to the backend's log.
type session struct {
	b   *Backend
	c   *client
	id  string
	pod string
	uid types.UID

	link     *link
	stdout   io.Reader
	linkDone <-chan error
	stderr   *io.PipeReader
	stderrW  *io.PipeWriter
	cancel   context.CancelFunc // ends the exec and log streams
	logsDone chan struct{}

	mu      sync.Mutex
	killed  bool // Kill deleted the Pod
	dropped bool // Kill dropped a taken-over connection

	done chan struct{} // closed when exit is final
	exit sandbox.Exit
	err  error
}

var (
	_ sandbox.Session = (*session)(nil)
	_ sandbox.Lasting = (*session)(nil)
)

func newSession(b *Backend, c *client, pod *corev1.Pod) *session {
	pr, pw := io.Pipe()
	return &session{b: b, c: c, id: pod.Annotations[annSessionID], pod: pod.Name, uid: pod.UID, stderr: pr, stderrW: pw,
		logsDone: make(chan struct{}), done: make(chan struct{})}
}

// attach execs the connector and follows the log; it returns once the
// keeper has made this connection the current one.
func (s *session) attach(ctx context.Context, logsSince time.Time) error {
	ex, err := executor(s.c, s.pod, []string{"python3", "-I", "-B", "-c", connectorSource, keeperSocket})
	if err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	streams, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s.link, s.stdout, s.linkDone = newLink(inW, outR)
	execErr := make(chan error, 1)
	go func() {
		err := ex.StreamWithContext(streams, remotecommand.StreamOptions{Stdin: inR, Stdout: outW, Stderr: logWriter{s}})
		inR.CloseWithError(errLinkClosed)
		outW.CloseWithError(err)
		execErr <- err
	}()
	go s.followLog(streams, logsSince)

	select {
	case <-s.link.attached:
	case err := <-execErr:
		if err == nil {
			err = errors.New("the connection ended before the keeper answered")
		}
		return fmt.Errorf("connecting to the keeper: %w", err)
	case <-ctx.Done():
		return fmt.Errorf("connecting to the keeper: %w", ctx.Err())
	}
	go s.finish()
	go s.recordActivity(streams)
	return nil
}

// logWriter passes the connector's stderr to the backend's log.
type logWriter struct{ s *session }

func (w logWriter) Write(p []byte) (int, error) {
	w.s.b.log.Warn("sandbox connector", "pod", w.s.pod, "stderr", string(p))
	return len(p), nil
}

func (s *session) followLog(ctx context.Context, since time.Time) {
	defer close(s.logsDone)
	opts := &corev1.PodLogOptions{Container: containerName, Follow: true}
	if !since.IsZero() {
		opts.SinceTime = &metav1.Time{Time: since}
	}
	stream, err := s.c.cs.CoreV1().Pods(s.c.namespace).GetLogs(s.pod, opts).Stream(ctx)
	if err != nil {
		s.stderrW.CloseWithError(nil)
		return
	}
	defer stream.Close()
	io.Copy(s.stderrW, stream)
	s.stderrW.Close()
}

// recordActivity keeps the Pod's last-active annotation current, at most
// once a minute while frames flow, and at least every third of the idle
// expiry while connected (a connected session is never idle to the janitor:
// its replica's own idle timeout governs it).
func (s *session) recordActivity(ctx context.Context) {
	t := time.NewTicker(activityEvery / 3)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.done:
			return
		case now := <-t.C:
			active := time.Unix(0, s.link.active.Load())
			if (active.After(last) && now.Sub(last) >= activityEvery) || now.Sub(last) >= s.b.opts.IdleExpiry/3 {
				if err := s.b.touch(ctx, s.c, s.pod, now); err != nil {
					s.b.log.Debug("recording sandbox activity", "pod", s.pod, "error", err)
					continue
				}
				last = now
			}
		}
	}
}

// touch patches the Pod's last-active annotation.
func (b *Backend) touch(ctx context.Context, c *client, pod string, now time.Time) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		annLastActive: now.UTC().Format(time.RFC3339)}}})
	_, err := c.cs.CoreV1().Pods(c.namespace).Patch(ctx, pod, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

func (s *session) ID() string            { return s.id }
func (s *session) Stdin() io.WriteCloser { return stdin{s.link} }
func (s *session) Stdout() io.Reader     { return s.stdout }
func (s *session) Stderr() io.Reader     { return s.stderr }

// killedExit is how a session ended by Kill ends.
var killedExit = sandbox.Exit{Code: 137, Signal: "SIGKILL", Killed: true}

// finish settles the exit once the connection has ended.
func (s *session) finish() {
	defer close(s.done)
	<-s.linkDone
	s.mu.Lock()
	killed, dropped := s.killed, s.dropped
	s.mu.Unlock()
	switch {
	case killed:
		s.exit = killedExit
		s.drop()
		return
	case dropped || s.link.takenOver.Load():
		s.exit = sandbox.Exit{Detached: true}
		s.drop()
		return
	}
	// The keeper said the command exited (or the connection was lost):
	// the Pod's status has the authoritative code and reason.
	wait := 2 * time.Minute
	if !s.link.exited.Load() {
		wait = lostGrace
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	var term *corev1.ContainerStateTerminated
	_, err := waitPod(ctx, s.c, s.pod, func(p *corev1.Pod) (bool, error) {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == containerName && cs.State.Terminated != nil {
				term = cs.State.Terminated
				return true, nil
			}
		}
		return false, nil
	})
	s.mu.Lock()
	killed = s.killed
	s.mu.Unlock()
	switch {
	case killed:
		s.exit = killedExit
		s.drop()
		return
	case term == nil && !s.link.exited.Load() && errors.Is(err, context.DeadlineExceeded):
		// Still running: our connection broke, the session lives on.
		s.exit = sandbox.Exit{Detached: true}
		s.drop()
		return
	case term != nil:
		s.exit = exitOf(term)
	case s.link.exited.Load():
		s.exit = exitOfStatus(int(int32(s.link.status.Load())))
	default:
		s.err = fmt.Errorf("kubernetes: sandbox Pod %s: %w", s.pod, err)
	}
	// Let the log reach Stderr, then release the Pod.
	select {
	case <-s.logsDone:
	case <-time.After(3 * time.Second):
	}
	s.drop()
	dctx, dcancel := context.WithTimeout(context.Background(), time.Minute)
	defer dcancel()
	if err := deletePod(dctx, s.c, s.pod, s.uid); err != nil && s.err == nil {
		s.err = fmt.Errorf("kubernetes: %w", err)
	}
}

func exitOf(t *corev1.ContainerStateTerminated) sandbox.Exit {
	e := exitOfStatus(int(t.ExitCode))
	e.OOMKilled = t.Reason == "OOMKilled"
	return e
}

func exitOfStatus(code int) sandbox.Exit {
	e := sandbox.Exit{Code: code}
	if code > 128 && code < 128+65 {
		e.Signal = unix.SignalName(unix.Signal(code - 128))
	}
	return e
}

// drop ends this process's streams to the Pod; the Pod is untouched.
func (s *session) drop() {
	if s.link != nil {
		s.link.close()
	}
	if s.cancel != nil {
		s.cancel()
	}
}

// Wait implements sandbox.Session.
func (s *session) Wait(ctx context.Context) (sandbox.Exit, error) {
	select {
	case <-s.done:
		return s.exit, s.err
	case <-ctx.Done():
		return sandbox.Exit{}, ctx.Err()
	}
}

// Kill implements sandbox.Session: it deletes the Pod and waits until it
// is gone, unless another process took the session over, in which case it
// only drops this connection.
func (s *session) Kill(ctx context.Context) error {
	select {
	case <-s.done:
		return nil
	default:
	}
	s.mu.Lock()
	if s.link.takenOver.Load() || s.dropped {
		s.dropped = true
		s.mu.Unlock()
		s.drop()
		return nil
	}
	s.killed = true
	s.mu.Unlock()
	if err := deletePod(ctx, s.c, s.pod, s.uid); err != nil {
		return fmt.Errorf("kubernetes: kill: %w", err)
	}
	s.drop()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Detach implements sandbox.Lasting: it drops this connection and leaves
// the Pod running for a later Reattach.
func (s *session) Detach(ctx context.Context) error {
	s.mu.Lock()
	s.dropped = !s.killed
	s.mu.Unlock()
	s.drop()
	select {
	case <-s.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Relabel implements sandbox.Lasting: the Pod's labels that stand for the
// Spec's become those of labels (a spare handed to a session), so that
// Reattach finds it by them.
func (s *session) Relabel(ctx context.Context, labels map[string]string) error {
	pod, err := s.c.cs.CoreV1().Pods(s.c.namespace).Get(ctx, s.pod, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kubernetes: relabel: %w", err)
	}
	patch, err := relabelPatch(pod, labels)
	if err != nil {
		return fmt.Errorf("kubernetes: relabel: %w", err)
	}
	if _, err := s.c.cs.CoreV1().Pods(s.c.namespace).Patch(ctx, s.pod, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("kubernetes: relabel Pod %s: %w", s.pod, err)
	}
	return nil
}
