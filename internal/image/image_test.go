package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

func TestSpecKey(t *testing.T) {
	base := Spec{}.Key()
	tests := []struct {
		name string
		spec Spec
		same bool
	}{
		{"explicit defaults", Spec{Suite: "bookworm", Mirror: "http://deb.debian.org/debian", Packages: DefaultPackages}, true},
		{"order, duplicates and blanks", Spec{Packages: []string{"python3-pil", " python3-pandas", "python3-munkres", "python3-matplotlib", "", "python3-numpy", "python3-pil"}}, true},
		{"mirror with trailing slash", Spec{Mirror: "http://deb.debian.org/debian/"}, true},
		{"python3 implied", Spec{Packages: []string{"python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pil", "python3-munkres"}}, true},
		{"other suite", Spec{Suite: "trixie"}, false},
		{"other mirror", Spec{Mirror: "http://ftp.de.debian.org/debian"}, false},
		{"fewer packages", Spec{Packages: []string{"python3"}}, false},
		{"more packages", Spec{Packages: append(slices.Clone(DefaultPackages), "python3-scipy")}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.spec.Key()
			if len(got) != 16 {
				t.Errorf("Key() = %q, want 16 hex digits", got)
			}
			if (got == base) != tc.same {
				t.Errorf("Key() = %s, default key %s: same = %v, want %v", got, base, got == base, tc.same)
			}
		})
	}
}

func TestSpecNormalized(t *testing.T) {
	got := Spec{Suite: " trixie ", Packages: []string{"python3-pil", "python3-numpy", "python3-pil"}}.Normalized()
	want := Spec{Suite: "trixie", Mirror: DefaultMirror, Packages: []string{"python3", "python3-numpy", "python3-pil"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Normalized() mismatch (-want +got):\n%s", diff)
	}
}

func TestSpecValidate(t *testing.T) {
	for _, bad := range []Spec{
		{Packages: []string{"--foo"}},
		{Packages: []string{"python3 python3-numpy"}},
		{Packages: []string{"Python3"}},
		{Suite: "bookworm;rm"},
		{Suite: "-x"},
		{Mirror: "deb.debian.org/debian"},
	} {
		if err := bad.Validate(); err == nil {
			t.Errorf("Validate(%+v) = nil, want an error", bad)
		}
	}
	if err := (Spec{Packages: []string{"python3-pil", "libstdc++6", "g++-12"}}).Validate(); err != nil {
		t.Errorf("Validate(valid) = %v", err)
	}
}

// fakeBuild returns BuildOptions whose debootstrap and chroot are
// stand-ins: debootstrap makes a tiny base tree in its target (third
// argument), chroot "installs" python3 and records the apt-get command line
// in marker; both count their runs in runs(). debExtra and chrootExtra are
// shell run at the end of each (e.g. "exit 1"); $t is the target.
func fakeBuild(t *testing.T, debExtra, chrootExtra string) (opts *BuildOptions, runs func() int) {
	t.Helper()
	dir := t.TempDir()
	deb := filepath.Join(dir, "debootstrap")
	if err := os.WriteFile(deb, []byte(`#!/bin/sh
set -e
echo run >>"`+dir+`/runs"
t=$3
echo "I: Retrieving InRelease"
echo "I: Retrieving libc6 2.36"
echo "I: Validating libc6 2.36"
echo "I: Retrieving dpkg 1.21"
echo "I: Base system installed successfully."
mkdir -p "$t/usr/bin" "$t/usr/sbin" "$t/etc" "$t/var/cache/apt/archives/partial" "$t/var/lib/apt/lists" "$t/proc" "$t/dev"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$t/etc/passwd"
printf 'root:x:0:\n' >"$t/etc/group"
echo "nameserver 10.0.0.1" >"$t/etc/resolv.conf"
echo vm >"$t/etc/hostname"
echo lists >"$t/var/lib/apt/lists/deb.debian.org_Packages"
echo deb >"$t/var/cache/apt/archives/libc6.deb"
`+debExtra+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	chroot := filepath.Join(dir, "chroot")
	if err := os.WriteFile(chroot, []byte(`#!/bin/sh
set -e
t=$1
shift
[ -x "$t/usr/sbin/policy-rc.d" ] || { echo "E: no policy-rc.d" >&2; exit 1; }
echo "Get:1 http://deb.debian.org/debian bookworm/main python3"
echo "Unpacking python3"
echo "Setting up python3"
printf '#!/bin/sh\n' >"$t/usr/bin/python3.11"
chmod 755 "$t/usr/bin/python3.11"
ln -s python3.11 "$t/usr/bin/python3"
echo deb >"$t/var/cache/apt/archives/python3.deb"
echo "$*" >"$t/marker"
`+chrootExtra+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return &BuildOptions{Logger: testLogger(t), Debootstrap: []string{"/bin/sh", deb}, Chroot: []string{"/bin/sh", chroot}},
		func() int {
			data, _ := os.ReadFile(filepath.Join(dir, "runs"))
			return strings.Count(string(data), "run")
		}
}

// leftovers lists the temporary trees next to dir.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".tmp-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBuild(t *testing.T) {
	ctx := t.Context()
	opts, runs := fakeBuild(t, "", "")
	dir := filepath.Join(t.TempDir(), "images", "bookworm")

	m, built, err := Build(ctx, dir, Spec{}, opts)
	if err != nil {
		t.Fatalf("Build() = %v", err)
	}
	if !built || runs() != 1 {
		t.Fatalf("Build() built = %v after %d debootstrap runs, want a build", built, runs())
	}
	want := Manifest{Key: Spec{}.Key(), Suite: DefaultSuite, Mirror: DefaultMirror,
		Packages: Spec{}.Normalized().Packages, Python: "python3.11", Built: m.Built}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("Build() manifest mismatch (-want +got):\n%s", diff)
	}
	if m.Built.IsZero() {
		t.Error("manifest has no build time")
	}
	onDisk, err := ReadManifest(dir)
	if err != nil || !cmp.Equal(onDisk, m) {
		t.Errorf("ReadManifest() = %+v, %v; want %+v", onDisk, err, m)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "marker")); !strings.HasPrefix(string(got), "apt-get install -y -q --no-install-recommends ") ||
		!strings.HasSuffix(string(got), " python3 python3-matplotlib python3-munkres python3-numpy python3-pandas python3-pil\n") {
		t.Errorf("chroot got %q, want apt-get install of the sorted package list", got)
	}
	for _, gone := range []string{"var/cache/apt/archives/python3.deb", "var/cache/apt/archives/libc6.deb",
		"var/lib/apt/lists/deb.debian.org_Packages", "etc/resolv.conf", "usr/sbin/policy-rc.d"} {
		if _, err := os.Lstat(filepath.Join(dir, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s not removed: %v", gone, err)
		}
	}
	if hostname, _ := os.ReadFile(filepath.Join(dir, "etc/hostname")); string(hostname) != "sandbox\n" {
		t.Errorf("etc/hostname = %q, want the host's name replaced", hostname)
	}
	passwd, _ := os.ReadFile(filepath.Join(dir, "etc/passwd"))
	if !strings.Contains(string(passwd), "\nnobody:x:65534:65534:") {
		t.Errorf("etc/passwd has no nobody:\n%s", passwd)
	}
	group, _ := os.ReadFile(filepath.Join(dir, "etc/group"))
	if !strings.Contains(string(group), "\nnogroup:x:65534:") {
		t.Errorf("etc/group has no nogroup:\n%s", group)
	}
	for name, mode := range map[string]fs.FileMode{"workspace": fs.ModeDir | fs.ModeSticky | 0o777, "tmp": fs.ModeDir | fs.ModeSticky | 0o777, ".": fs.ModeDir | 0o755} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil || fi.Mode() != mode {
			t.Errorf("%s: %v, %v; want mode %v", name, fi.Mode(), err, mode)
		}
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary trees left behind: %v", l)
	}

	// Same inputs, spelled differently: nothing to do.
	_, built, err = Build(ctx, dir, Spec{Packages: []string{"python3-pil", "python3-numpy", "python3-munkres", "python3-pandas", "python3-matplotlib"}, Mirror: DefaultMirror + "/"}, opts)
	if err != nil || built || runs() != 1 {
		t.Fatalf("second Build() = built %v, %v after %d runs; want a cache hit", built, err, runs())
	}

	// Other packages: rebuilt and swapped in.
	other := Spec{Packages: []string{"python3-numpy"}}
	m2, built, err := Build(ctx, dir, other, opts)
	if err != nil || !built || runs() != 2 {
		t.Fatalf("Build(other packages) = built %v, %v after %d runs; want a rebuild", built, err, runs())
	}
	if m2.Key != other.Key() || m2.Key == m.Key {
		t.Errorf("rebuilt manifest key = %s, want %s", m2.Key, other.Key())
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "marker")); !strings.HasSuffix(string(got), "--force-unsafe-io python3 python3-numpy\n") {
		t.Errorf("rebuilt tree has marker %q, want the new package list", got)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary trees left behind: %v", l)
	}
}

func TestBuildFailureKeepsPreviousRootfs(t *testing.T) {
	ctx := t.Context()
	good, _ := fakeBuild(t, "", "")
	dir := filepath.Join(t.TempDir(), "rootfs")
	if _, _, err := Build(ctx, dir, Spec{}, good); err != nil {
		t.Fatal(err)
	}
	bad, _ := fakeBuild(t, "", `echo "E: Unable to locate package python3-nope" >&2; exit 100`)
	_, built, err := Build(ctx, dir, Spec{Packages: []string{"python3-nope"}}, bad)
	if err == nil || built {
		t.Fatalf("Build(failing debootstrap) = built %v, %v; want an error", built, err)
	}
	if !strings.Contains(err.Error(), "python3-nope") {
		t.Errorf("error %q does not show debootstrap's output", err)
	}
	if _, ok := Current(dir, Spec{}); !ok {
		t.Error("previous rootfs is gone after a failed build")
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary trees left behind: %v", l)
	}

	// debootstrap failing.
	badBase, _ := fakeBuild(t, `echo "E: Failed getting release file" >&2; exit 1`, "")
	if _, _, err := Build(ctx, dir, Spec{Suite: "nosuch"}, badBase); err == nil || !strings.Contains(err.Error(), "Failed getting release file") {
		t.Errorf("Build(failing debootstrap) = %v, want debootstrap's message", err)
	}
	// A tree without python3 is not a rootfs either.
	nopy, _ := fakeBuild(t, "", `rm "$t/usr/bin/python3.11"`)
	if _, _, err := Build(ctx, dir, Spec{Packages: []string{"python3-scipy"}}, nopy); err == nil || !strings.Contains(err.Error(), "python3") {
		t.Errorf("Build(no python3) = %v, want an error about python3", err)
	}
	if _, ok := Current(dir, Spec{}); !ok {
		t.Error("previous rootfs is gone after a failed build")
	}
}

func TestBuildRemovesInterruptedBuild(t *testing.T) {
	opts, _ := fakeBuild(t, "", "")
	parent := t.TempDir()
	dir := filepath.Join(parent, "rootfs")
	// What a killed build leaves: a temporary tree without a manifest.
	stale := filepath.Join(parent, ".rootfs.tmp-123")
	if err := os.MkdirAll(filepath.Join(stale, "usr", "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, ok := Current(stale, Spec{}); ok {
		t.Fatal("a tree without a manifest counts as current")
	}
	if _, _, err := Build(t.Context(), dir, Spec{}, opts); err != nil {
		t.Fatal(err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("interrupted build not cleaned up: %v", l)
	}
}

func TestBuildRefusesForeignDirectory(t *testing.T) {
	opts, runs := fakeBuild(t, "", "")
	dir := t.TempDir()
	precious := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(precious, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Build(t.Context(), dir, Spec{}, opts); err == nil || !strings.Contains(err.Error(), "not a codemode rootfs") {
		t.Errorf("Build(into a foreign directory) = %v, want a refusal", err)
	}
	if _, err := os.Stat(precious); err != nil || runs() != 0 {
		t.Errorf("foreign directory touched: %v, %d debootstrap runs", err, runs())
	}
}

func TestBuildCancel(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// Signals that it is running, then blocks until killed.
	opts, _ := fakeBuild(t, "", `echo started >"`+fifo+`"; sleep 600 & wait`)
	ctx, cancel := context.WithCancel(t.Context())
	dir := filepath.Join(t.TempDir(), "rootfs")
	go func() {
		if data, err := os.ReadFile(fifo); err == nil && len(data) > 0 {
			cancel()
		}
	}()
	_, _, err := Build(ctx, dir, Spec{}, opts)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Build(cancelled) = %v, want context.Canceled", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("cancelled build left %s: %v", dir, err)
	}
	if l := leftovers(t, dir); len(l) > 0 {
		t.Errorf("temporary trees left behind: %v", l)
	}
}

func TestResolveIn(t *testing.T) {
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, "usr/bin"))
	mustWrite(t, filepath.Join(root, "usr/bin/python3.11"), "")
	for link, target := range map[string]string{
		"usr/bin/rel":     "python3.11",
		"usr/bin/abs":     "/usr/bin/python3.11",
		"usr/bin/chain":   "abs",
		"usr/bin/escape":  "../../../../etc/passwd",
		"usr/bin/dangles": "python2",
		"usr/bin/loop":    "loop",
	} {
		if err := os.Symlink(target, filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	for _, ok := range []string{"usr/bin/python3.11", "usr/bin/rel", "usr/bin/abs", "usr/bin/chain"} {
		if p, err := resolveIn(root, ok); err != nil || p != filepath.Join(root, "usr/bin/python3.11") {
			t.Errorf("resolveIn(%s) = %q, %v", ok, p, err)
		}
	}
	for _, bad := range []string{"usr/bin/escape", "usr/bin/dangles", "usr/bin/loop", "usr/bin"} {
		if p, err := resolveIn(root, bad); err == nil {
			t.Errorf("resolveIn(%s) = %q, want an error", bad, p)
		}
	}
}

func TestWriteTar(t *testing.T) {
	root := t.TempDir()
	mustMkdir(t, filepath.Join(root, "usr/bin"))
	mustMkdir(t, filepath.Join(root, "proc/1"))
	mustMkdir(t, filepath.Join(root, "dev"))
	mustWrite(t, filepath.Join(root, "usr/bin/python3.11"), "#!python")
	mustWrite(t, filepath.Join(root, "dev/null"), "not a device")
	mustWrite(t, filepath.Join(root, "proc/1/status"), "x")
	if err := os.Symlink("python3.11", filepath.Join(root, "usr/bin/python3")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(root, "usr/bin/python3.11"), filepath.Join(root, "usr/bin/python3.11-copy")); err != nil {
		t.Fatal(err)
	}

	var buf bytes.Buffer
	if err := WriteTar(t.Context(), &buf, root); err != nil {
		t.Fatalf("WriteTar() = %v", err)
	}
	type entry struct {
		Type byte
		Link string
		Body string
	}
	got := map[string]entry{}
	tr := tar.NewReader(&buf)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(tr)
		got[h.Name] = entry{h.Typeflag, h.Linkname, string(body)}
		if h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: owner names %q/%q, want numeric only", h.Name, h.Uname, h.Gname)
		}
	}
	want := map[string]entry{
		"./":                      {Type: tar.TypeDir},
		"dev/":                    {Type: tar.TypeDir},
		"proc/":                   {Type: tar.TypeDir},
		"usr/":                    {Type: tar.TypeDir},
		"usr/bin/":                {Type: tar.TypeDir},
		"usr/bin/python3":         {Type: tar.TypeSymlink, Link: "python3.11"},
		"usr/bin/python3.11":      {Type: tar.TypeReg, Body: "#!python"},
		"usr/bin/python3.11-copy": {Type: tar.TypeLink, Link: "usr/bin/python3.11"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("WriteTar() entries mismatch (-want +got):\n%s", diff)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLineLoggerPhases(t *testing.T) {
	var buf bytes.Buffer
	l := &lineLogger{log: slog.New(slog.NewTextHandler(&buf, nil)), cmd: "debootstrap"}
	io.WriteString(l, "I: Retrieving InRelease\nI: Retrieving libc6\nI: Validating libc6\nI: Retrieving dpkg\n")
	io.WriteString(l, "I: Unpacking the base system...\nW: something odd\nupdate-alternatives: using x\n")
	io.WriteString(l, "Get:1 http://deb.debian.org/debian bookworm/main python3\nGet:2 http://x y\nFetched 74.6 MB in 0s\n")
	io.WriteString(l, "Selecting previously unselected package a.\nPreparing to unpack a\nUnpacking a\nSelecting previously unselected package b.\nSetting up a\nProcessing triggers\nSetting up b\nno newline at the end")
	l.flush()
	var info []string
	for line := range strings.SplitSeq(strings.TrimSpace(buf.String()), "\n") {
		_, msg, _ := strings.Cut(line, ` line="`)
		info = append(info, strings.TrimSuffix(msg, `"`))
	}
	want := []string{"I: Retrieving InRelease", "I: Unpacking the base system...", "W: something odd",
		"Get:1 http://deb.debian.org/debian bookworm/main python3", "Fetched 74.6 MB in 0s",
		"Selecting previously unselected package a.", "Setting up a"}
	if diff := cmp.Diff(want, info); diff != "" {
		t.Errorf("lines logged at Info and above (-want +got):\n%s", diff)
	}
	if got := l.tail(); !strings.HasSuffix(got, "Setting up b\nno newline at the end") {
		t.Errorf("tail() = %q, want the last lines", got)
	}
}

// TestMissingDebootstrapSaysHowToInstall checks the message a user without
// debootstrap gets, and that nothing is left behind.
func TestMissingDebootstrapSaysHowToInstall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rootfs")
	_, _, err := Build(context.Background(), dir, Spec{}, &BuildOptions{Logger: testLogger(t), Debootstrap: []string{"/nonexistent/debootstrap"}})
	if !errors.Is(err, ErrNoDebootstrap) || !strings.Contains(err.Error(), "apt-get install debootstrap") {
		t.Fatalf("Build without debootstrap: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("a failed build left %s behind: %v", dir, err)
	}
}
