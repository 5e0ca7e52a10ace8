package sandbox

import (
	"os"
	"strconv"
	"testing"
)

func TestOwnerID(t *testing.T) {
	self := OwnerID(os.Getpid())
	tests := []struct {
		id    string
		alive bool
	}{
		{self, true},
		{strconv.Itoa(os.Getpid()) + "-1", false}, // same pid, another start time: a reused pid
		{"999999999-5", false},
		{"0-0", false},
		{"garbage", false},
		{"", false},
	}
	for _, tt := range tests {
		if got := OwnerAlive(tt.id); got != tt.alive {
			t.Errorf("OwnerAlive(%q) = %v, want %v", tt.id, got, tt.alive)
		}
	}
}
