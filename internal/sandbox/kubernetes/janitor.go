package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/codemode/codemode/internal/sandbox"
)

// finishedGrace is how long an ended Pod is left to the session that
// watches it (to read its exit status) before the janitor removes it.
const finishedGrace = time.Minute

// startJanitor runs the janitor every JanitorEvery until Close.
func (b *Backend) startJanitor() {
	b.mu.Lock()
	if b.janitorOn || b.opts.JanitorEvery < 0 {
		b.mu.Unlock()
		return
	}
	b.janitorOn = true
	b.mu.Unlock()
	go func() {
		defer close(b.stopped)
		t := time.NewTicker(b.opts.JanitorEvery)
		defer t.Stop()
		for {
			ctx, cancel := context.WithTimeout(context.Background(), b.opts.JanitorEvery)
			removed, err := b.sweep(ctx)
			cancel()
			if err != nil {
				b.log.Warn("sandbox janitor", "error", err)
			} else if len(removed) > 0 {
				b.log.Info("sandbox janitor removed Pods", "pods", removed)
			}
			select {
			case <-b.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// sweep removes the managed Pods of the namespace that no session can use
// any more, and returns their names. Any replica may sweep; the rules only
// read the Pods and their replicas, so replicas agree.
func (b *Backend) sweep(ctx context.Context) ([]string, error) {
	c, err := b.connect()
	if err != nil {
		return nil, err
	}
	list, err := c.cs.CoreV1().Pods(c.namespace).List(ctx, metav1.ListOptions{LabelSelector: labelManagedBy + "=" + managedBy})
	if err != nil {
		return nil, fmt.Errorf("listing sandbox Pods: %w", err)
	}
	alive := map[string]bool{} // replica Pods looked up in this sweep
	var removed []string
	var errs []error
	now := time.Now()
	for i := range list.Items {
		p := &list.Items[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		why := b.reapReason(ctx, c, p, now, alive)
		if why == "" {
			continue
		}
		opts := metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(1)), Preconditions: metav1.NewUIDPreconditions(string(p.UID))}
		if err := c.cs.CoreV1().Pods(c.namespace).Delete(ctx, p.Name, opts); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting Pod %s (%s): %w", p.Name, why, err))
			continue
		}
		b.log.Debug("sandbox janitor: removing Pod", "pod", p.Name, "why", why)
		removed = append(removed, p.Name)
	}
	return removed, errors.Join(errs...)
}

// reapReason says why p must go, or "" to keep it.
func (b *Backend) reapReason(ctx context.Context, c *client, p *corev1.Pod, now time.Time, alive map[string]bool) string {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		ended := p.CreationTimestamp.Time
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil && t.FinishedAt.After(ended) {
				ended = t.FinishedAt.Time
			}
		}
		if now.Sub(ended) > finishedGrace {
			return "ended"
		}
		return ""
	}
	if expiry, err := time.ParseDuration(p.Annotations[annIdleExpiry]); err == nil && expiry > 0 {
		if last, err := time.Parse(time.RFC3339, p.Annotations[annLastActive]); err == nil && now.Sub(last) > expiry {
			return "idle since " + last.Format(time.RFC3339)
		}
	}
	if durable(p.Labels) {
		return ""
	}
	switch p.Annotations[annReplicaKind] {
	case "pod":
		ns := p.Annotations[annReplicaNS]
		name := p.Labels[labelReplica]
		key := ns + "/" + name
		ok, seen := alive[key]
		if !seen {
			_, err := c.cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
			switch {
			case err == nil:
				ok = true
			case apierrors.IsNotFound(err):
				ok = false
			default:
				ok = true // cannot tell: keep
			}
			alive[key] = ok
		}
		if !ok {
			return "its replica Pod " + key + " is gone"
		}
	case "host":
		// Only the replica's own host can tell whether its process runs.
		if c.replica.Kind == "host" && p.Labels[labelReplica] == labelValue(c.replica.ID) {
			if owner := p.Annotations[annOwner]; owner != "" && !sandbox.OwnerAlive(owner) {
				return "its codemode process " + owner + " is gone"
			}
		}
	}
	return ""
}
