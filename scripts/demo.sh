#!/usr/bin/env bash
# Sets up codemode on a fresh Debian machine and runs a real MCP client
# session against it: two run_python calls on the native sandbox, the second
# using state from the first.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
ensure_runtime_deps
build_codemode
cd "$ROOT"
log "running examples/demo-client against bin/codemode"
go run ./examples/demo-client bin/codemode
