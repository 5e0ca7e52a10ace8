package main

import (
	"math"
	"testing"
)

func TestParseCPUTimes(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       cpuTimes
		err        bool
	}{
		// user nice system idle iowait irq softirq steal guest guest_nice
		{"full line", "cpu  100 5 50 800 20 3 2 20 40 1\ncpu0 50 2 25 400 10 1 1 10 20 0\n", cpuTimes{idle: 820, total: 1000}, false},
		{"old kernel, four fields", "cpu 10 0 10 80\n", cpuTimes{idle: 80, total: 100}, false},
		{"per-cpu line first", "cpu0 1 2 3 4 5\n", cpuTimes{}, true},
		{"not a number", "cpu 1 2 x 4 5\n", cpuTimes{}, true},
		{"empty", "", cpuTimes{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseCPUTimes(tc.stat)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("parseCPUTimes = %+v, %v; want %+v, error %v", got, err, tc.want, tc.err)
			}
		})
	}
}

func TestBusyShare(t *testing.T) {
	for _, tc := range []struct {
		name          string
		before, after cpuTimes
		want          float64
	}{
		{"all idle", cpuTimes{idle: 100, total: 200}, cpuTimes{idle: 300, total: 400}, 0},
		{"all busy", cpuTimes{idle: 100, total: 200}, cpuTimes{idle: 100, total: 400}, 1},
		{"a quarter busy", cpuTimes{idle: 0, total: 0}, cpuTimes{idle: 75, total: 100}, 0.25},
		{"no time passed", cpuTimes{idle: 5, total: 10}, cpuTimes{idle: 5, total: 10}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := busyShare(tc.before, tc.after); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("busyShare = %v, want %v", got, tc.want)
			}
		})
	}
}
