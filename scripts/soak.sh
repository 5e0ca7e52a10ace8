#!/usr/bin/env bash
# Long-running check that nothing leaks: many calls with random faults
# against one codemode (not part of the default test run).
#   ./scripts/soak.sh            # 10,000 calls
#   CODEMODE_SOAK_CALLS=2000 ./scripts/soak.sh
source "$(dirname "${BASH_SOURCE[0]}")/testdeps.sh"
cd "$ROOT"
go test -tags soak -count=1 -run '^TestSoak$' -timeout 3h -v ./e2e/ 2>&1 | grep -vE '^\s+time='
