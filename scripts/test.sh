#!/usr/bin/env bash
# Runs the whole test suite: installs its dependencies, then vet,
# staticcheck and every test (Go and Python, unit and end-to-end, on the
# real sandbox and real MCP servers).
# Stop the dockerd and the Kubernetes cluster that testdeps.sh starts (if it
# starts them), however this ends.
trap '[ "${DOCKERD_STARTED:-0}" = 1 ] && stop_dockerd; [ "${KUBE_STARTED:-0}" = 1 ] && stop_kube' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
source "$(dirname "${BASH_SOURCE[0]}")/testdeps.sh"
source "$TESTDEPS/env" # DOCKER_HOST and the CODEMODE_TEST_* paths (internal/testenv)
cd "$ROOT"
log "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './testdeps/*'))
if [ -n "$unformatted" ]; then echo "gofmt needed:"; echo "$unformatted"; exit 1; fi
log "go vet"
go vet ./...
log "cross build and vet (macOS, Linux arm64)"
for t in darwin/arm64 darwin/amd64 linux/arm64; do
	GOOS=${t%/*} GOARCH=${t#*/} go build ./...
	GOOS=${t%/*} GOARCH=${t#*/} go vet ./...
done
log "staticcheck"
go tool staticcheck ./...
log "go test"
go test -count=1 -timeout 30m "$@" ./...
log "go test -race (concurrency-heavy packages)"
# -race needs cgo; these packages do not run the sandbox init from their test binary in a way that needs a pure-Go build.
CGO_ENABLED=1 go test -count=1 -race -timeout 15m ./internal/downstream/ ./internal/proxy/ ./internal/tooldocs/ ./internal/wire/ ./internal/mcpserver/ ./internal/executor/ ./internal/hostrpc/ ./internal/gate/ ./internal/egress/ ./internal/approval/ ./internal/policy/ ./internal/audit/ ./internal/telemetry/ ./internal/catalog/ ./internal/signin/
