// Package e2e tests the built codemode binary through real MCP clients over
// real transports, with the real sandbox. TestMain builds the binary once
// and, after all tests, checks that nothing was left behind.
package e2e
