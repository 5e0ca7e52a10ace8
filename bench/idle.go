package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// cpuTimes is the first line of /proc/stat: time spent by all CPUs in each
// state since boot, in clock ticks.
type cpuTimes struct {
	idle, total uint64 // idle counts iowait too
}

// parseCPUTimes reads the aggregate "cpu" line of /proc/stat.
func parseCPUTimes(stat string) (cpuTimes, error) {
	line, _, _ := strings.Cut(stat, "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("no aggregate cpu line in /proc/stat: %q", line)
	}
	var t cpuTimes
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("cpu field %d of /proc/stat: %w", i+1, err)
		}
		// guest and guest_nice (fields 9 and 10) are already counted in user and nice.
		if i >= 8 {
			break
		}
		t.total += v
		if i == 3 || i == 4 { // idle, iowait
			t.idle += v
		}
	}
	return t, nil
}

// busyShare is the share of CPU time not idle between two readings.
func busyShare(before, after cpuTimes) float64 {
	total := after.total - before.total
	if total == 0 {
		return 0
	}
	return 1 - float64(after.idle-before.idle)/float64(total)
}

func readCPUTimes() (cpuTimes, error) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, err
	}
	return parseCPUTimes(string(data))
}

// idleBusy is the busy share under which the CPUs count as idle: a
// section starts once the processes of the one before it (sixteen
// sessions, a hundred servers) have finished exiting.
const idleBusy = 0.10

// idleLimit bounds the wait: a machine that never quiets down is measured
// anyway, and the report says how busy it was.
const idleLimit = 30 * time.Second

// waitIdle waits, up to limit, until the CPUs were idle (busy under
// idleBusy) over half a second. It returns how long it waited and the busy
// share of the last half second (-1 when /proc/stat cannot be read: no
// wait).
func waitIdle(limit time.Duration) (time.Duration, float64) {
	const window = 500 * time.Millisecond
	start := time.Now()
	prev, err := readCPUTimes()
	if err != nil {
		return 0, -1
	}
	for {
		time.Sleep(window)
		cur, err := readCPUTimes()
		if err != nil {
			return time.Since(start), -1
		}
		busy := busyShare(prev, cur)
		if busy < idleBusy || time.Since(start) >= limit {
			return time.Since(start), busy
		}
		prev = cur
	}
}

// settle waits for idle CPUs before one backend's measurements, as before
// each section: the backend before it leaves sandboxes and engine
// processes exiting.
func settle(what string) {
	waited, busy := waitIdle(idleLimit)
	progress("%s: started after %s waiting for idle CPUs (%s)", what, waited.Round(100*time.Millisecond), busyText(busy))
}
