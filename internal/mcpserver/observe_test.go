package mcpserver

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// /metrics on the main listener is behind the same authentication as /mcp.
func TestMetricsBehindAuth(t *testing.T) {
	tokens, err := LoadTokens("", "ops:0123456789abcdef0123")
	if err != nil {
		t.Fatal(err)
	}
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("codemode_up 1\n")) })
	tests := []struct {
		name   string
		tokens *Tokens
		bearer string
		want   int
	}{
		{"no token", tokens, "", http.StatusUnauthorized},
		{"wrong token", tokens, "nope", http.StatusUnauthorized},
		{"valid token", tokens, "0123456789abcdef0123", http.StatusOK},
		{"unauthenticated loopback server", nil, "", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{DefaultTimeout: 30 * time.Second, MaxTimeout: 120 * time.Second})
			h, err := s.httpHandler(t.Context(), HTTPOptions{Path: "/mcp", Tokens: tt.tokens, Metrics: metrics}, "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			if tt.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tt.bearer)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != tt.want {
				t.Errorf("GET /metrics = %d, want %d", rec.Code, tt.want)
			}
		})
	}
}
