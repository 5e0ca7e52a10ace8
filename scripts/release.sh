#!/usr/bin/env bash
# Builds release archives of codemode: static (CGO_ENABLED=0) binaries for
# linux/amd64, linux/arm64, darwin/arm64 and darwin/amd64, each stamped with
# the version and commit, packed as codemode_VERSION_OS_ARCH.tar.gz with
# README.md and SECURITY.md, and a SHA256SUMS file over the archives.
#
#   scripts/release.sh [VERSION]   # default: git describe --tags, else dev
#   PLATFORMS="linux/amd64" scripts/release.sh v0.1.0   # fewer platforms
#
# Output goes to dist/. .goreleaser.yaml describes the same build for
# GoReleaser.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
command -v go >/dev/null || { echo "release.sh: go is not installed" >&2; exit 1; }

VERSION=${1:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=$(git rev-parse HEAD 2>/dev/null || echo unknown)
PLATFORMS=${PLATFORMS:-linux/amd64 linux/arm64 darwin/arm64 darwin/amd64}
PKG=github.com/codemode/codemode/internal/app
DIST=$ROOT/dist

rm -rf "$DIST"
mkdir -p "$DIST"
for platform in $PLATFORMS; do
	os=${platform%/*} arch=${platform#*/}
	name=codemode_${VERSION}_${os}_${arch}
	stage=$DIST/$name
	mkdir -p "$stage"
	echo "==> $name" >&2
	# CGO_ENABLED=0: the native sandbox's init drops privileges on every
	# thread, which needs a pure-Go binary; it also makes the binary static.
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$COMMIT" \
		-o "$stage/codemode" ./cmd/codemode
	cp README.md SECURITY.md "$stage/"
	tar -C "$DIST" -czf "$DIST/$name.tar.gz" "$name"
	rm -rf "$stage"
done
(cd "$DIST" && sha256sum -- *.tar.gz >SHA256SUMS)
cat "$DIST/SHA256SUMS"
