package app

import (
	"strings"
	"testing"

	"github.com/codemode/codemode/internal/settings"
)

func TestCheckConsole(t *testing.T) {
	tests := []struct {
		name, console, tokens string
		wantErr               string
	}{
		{"off", "", "", ""},
		{"loopback", "127.0.0.1:8766", "", ""},
		{"localhost", "localhost:0", "", ""},
		{"beyond loopback without tokens", "0.0.0.0:8766", "", "beyond loopback without tokens"},
		{"beyond loopback with tokens", "0.0.0.0:8766", "alice:alice-token-0123456789", ""},
		{"bad tokens", "127.0.0.1:0", "alice:short", "shorter than 16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckHTTP(settings.Settings{Console: tc.console, Tokens: tc.tokens})
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("CheckHTTP = %v, want %q", err, tc.wantErr)
			}
		})
	}
}
