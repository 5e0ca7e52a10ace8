package serverconfig

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Names that identify the reference bridge.
var referenceNames = []string{"mcp-server-code-execution-mode", "mcp_server_code_execution_mode"}

const referenceScript = "mcp_server_code_execution_mode.py"

// ownName is codemode's own binary and server name.
const ownName = "codemode"

// selfReference reports whether an entry would start codemode or the reference
// bridge, which would make codemode call itself. The rules, all
// case-insensitive, are the reference's plus codemode's own:
//
//   - the entry's name is codemode or one of the reference's names;
//   - the command's base name (without .exe/.cmd/.bat) is codemode or a
//     reference name, or ends with mcp_server_code_execution_mode.py;
//   - the command is one of self (paths of the running binary), or a bare
//     command with the same base name as one of them;
//   - an argument, as a whole or its base name, with a package version
//     ("@1.2", "==1.2") removed, is a reference name or ends with
//     mcp_server_code_execution_mode.py (this catches
//     "uvx --from git+... mcp-server-code-execution-mode run");
//   - an argument is codemode as a bare word or a Go package path ending in
//     /cmd/codemode (catching "go run github.com/.../cmd/codemode@latest"),
//     or is one of self. A directory such as ~/src/codemode is not a match:
//     unlike the reference's long names, "codemode" is a plausible folder to
//     hand to a filesystem server.
//
// It returns a short explanation for the report.
func selfReference(name, command string, args, self []string) (string, bool) {
	lname := strings.ToLower(name)
	if lname == ownName || isReferenceName(lname) {
		return fmt.Sprintf("name %q is codemode's or the reference bridge's", name), true
	}
	if command != "" {
		base := trimExeSuffix(baseName(strings.ToLower(command)))
		if base == ownName || isReferenceName(base) || strings.HasSuffix(base, referenceScript) {
			return fmt.Sprintf("command %q starts codemode or the reference bridge", command), true
		}
		if matchesSelf(command, self, true) {
			return fmt.Sprintf("command %q is this codemode binary", command), true
		}
	}
	for _, a := range args {
		la := strings.ToLower(a)
		whole, base := stripVersion(la), stripVersion(baseName(la))
		if isReferenceName(whole) || isReferenceName(base) ||
			strings.HasSuffix(la, referenceScript) || strings.HasSuffix(base, referenceScript) {
			return fmt.Sprintf("argument %q starts the reference bridge", a), true
		}
		if whole == ownName || strings.HasSuffix(whole, "/cmd/"+ownName) {
			return fmt.Sprintf("argument %q starts codemode", a), true
		}
		if matchesSelf(a, self, false) {
			return fmt.Sprintf("argument %q is this codemode binary", a), true
		}
	}
	return "", false
}

func isReferenceName(s string) bool {
	for _, n := range referenceNames {
		if s == n {
			return true
		}
	}
	return false
}

// matchesSelf reports whether s names one of the paths in self: the same
// cleaned path, or, when bareOK and s has no directory part, the same base
// name (a command looked up in PATH).
func matchesSelf(s string, self []string, bareOK bool) bool {
	if s == "" {
		return false
	}
	bare := !strings.ContainsAny(s, `/\`)
	for _, p := range self {
		if p == "" {
			continue
		}
		if !bare && filepath.Clean(s) == filepath.Clean(p) {
			return true
		}
		if bare && bareOK && strings.EqualFold(trimExeSuffix(s), trimExeSuffix(baseName(p))) {
			return true
		}
	}
	return false
}

// baseName returns the last element of a slash- or backslash-separated path
// (config files written on Windows use either).
func baseName(s string) string {
	s = strings.TrimRight(s, `/\`)
	if i := strings.LastIndexAny(s, `/\`); i >= 0 {
		return s[i+1:]
	}
	return s
}

func trimExeSuffix(s string) string {
	for _, ext := range []string{".exe", ".cmd", ".bat"} {
		if len(s) > len(ext) && strings.EqualFold(s[len(s)-len(ext):], ext) {
			return s[:len(s)-len(ext)]
		}
	}
	return s
}

// stripVersion removes a package version or tag from an argument such as
// "pkg@1.2.3", "@scope/pkg@latest" or "pkg==0.2.0".
func stripVersion(s string) string {
	if i := strings.Index(s, "=="); i > 0 {
		s = s[:i]
	}
	if i := strings.LastIndexByte(s, '@'); i > 0 {
		s = s[:i]
	}
	return s
}
