// Package archtest keeps the repository's structural rules as tests rather
// than memory: what leaf packages may import (the rules their doc comments
// state), that nothing imports upward, and that every package says what it
// is for. It has no code of its own.
package archtest
