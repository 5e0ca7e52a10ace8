package executor

import "testing"

func TestSummaries(t *testing.T) {
	for status, want := range map[string]string{StatusSuccess: "Success (no output)", StatusTimeout: "Timeout: execution exceeded 7s",
		StatusValidationError: "bad", StatusError: "Sandbox error: bad"} {
		r := Result{Status: status, Error: "bad", TimeoutSeconds: 7}
		r.Finish()
		if r.Summary != want {
			t.Errorf("summary for %s = %q, want %q", status, r.Summary, want)
		}
	}
}
