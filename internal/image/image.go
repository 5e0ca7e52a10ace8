// Package image builds a Python root filesystem from Debian packages and
// imports it into a container engine, so codemode's sandboxes need no
// container registry.
//
// Build runs debootstrap (variant minbase) into a temporary directory next to
// the destination, trims it, writes a manifest (etc/codemode-image.json) and
// renames it into place, so an interrupted build never leaves a directory
// that looks complete. The manifest records a content key derived from the
// suite, mirror and package list; a later Build with the same inputs finds
// the key and does nothing. Import streams a tar of such a directory into
// "<engine> import" and labels the image with the key, so a later Import of
// the same rootfs is skipped too. The directory itself also works as the
// native backend's --rootfs.
//
// Nothing here reads the environment or keeps global state; commands
// (debootstrap, the engine) and the logger are passed in. The contract is
// tested in image_test.go with a fake debootstrap and a fake engine, and for
// real (debootstrap, podman, docker) in integration_test.go.
package image

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Defaults for Spec fields left empty.
const (
	DefaultSuite  = "bookworm"
	DefaultMirror = "http://deb.debian.org/debian"
)

// DefaultPackages is the package list used when Spec.Packages is empty: the
// interpreter and the data-analysis stack agents reach for first.
// python3-munkres is there to satisfy python3-fonttools' (matplotlib's)
// "python3-scipy | python3-munkres": otherwise apt takes SciPy, which in
// bookworm depends on Pythran, GCC and Boost (0.8 GB more).
var DefaultPackages = []string{"python3", "python3-numpy", "python3-pandas", "python3-matplotlib", "python3-pil", "python3-munkres"}

// ManifestPath is where Build writes the manifest, relative to the rootfs.
const ManifestPath = "etc/codemode-image.json"

// LabelKey is the image label that carries the content key of an imported
// rootfs; LabelSuite carries its Debian suite.
const (
	LabelKey   = "io.codemode.image.key"
	LabelSuite = "io.codemode.image.suite"
)

// formatVersion is part of every content key. Bump it when Build changes
// what it puts into a rootfs, so existing caches are rebuilt.
const formatVersion = "codemode-image/2" // bump when Build lays the rootfs out differently

// Spec says what goes into a root filesystem.
type Spec struct {
	Suite    string   // Debian suite; "" means DefaultSuite
	Mirror   string   // Debian mirror URL; "" means DefaultMirror
	Packages []string // Debian packages; empty means DefaultPackages. python3 is always included.
}

// Normalized returns s with defaults filled in and the package list sorted,
// without duplicates and with python3 in it. Specs that normalize to the same
// value build the same rootfs and have the same Key.
func (s Spec) Normalized() Spec {
	n := Spec{Suite: strings.TrimSpace(s.Suite), Mirror: strings.TrimRight(strings.TrimSpace(s.Mirror), "/")}
	if n.Suite == "" {
		n.Suite = DefaultSuite
	}
	if n.Mirror == "" {
		n.Mirror = DefaultMirror
	}
	for _, p := range s.Packages {
		if p = strings.TrimSpace(p); p != "" {
			n.Packages = append(n.Packages, p)
		}
	}
	if len(n.Packages) == 0 {
		n.Packages = slices.Clone(DefaultPackages)
	}
	n.Packages = append(n.Packages, "python3")
	slices.Sort(n.Packages)
	n.Packages = slices.Compact(n.Packages)
	return n
}

// Key returns the content key of the normalized spec: a short hex digest of
// the suite, mirror and packages (and of this package's rootfs format).
func (s Spec) Key() string {
	n := s.Normalized()
	h := sha256.New()
	fmt.Fprintf(h, "%s\nsuite %s\nmirror %s\n", formatVersion, n.Suite, n.Mirror)
	for _, p := range n.Packages {
		fmt.Fprintf(h, "package %s\n", p)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

var (
	// Debian policy §5.6.1 for package names; also keeps flags out of
	// debootstrap's --include.
	packageRE = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	suiteRE   = regexp.MustCompile(`^[a-z][a-z0-9.-]*$`)
)

// Validate reports values that debootstrap would misread.
func (s Spec) Validate() error {
	n := s.Normalized()
	var errs []error
	if !suiteRE.MatchString(n.Suite) {
		errs = append(errs, fmt.Errorf("invalid suite %q", n.Suite))
	}
	if !strings.HasPrefix(n.Mirror, "http://") && !strings.HasPrefix(n.Mirror, "https://") && !strings.HasPrefix(n.Mirror, "file:/") {
		errs = append(errs, fmt.Errorf("invalid mirror %q: want an http://, https:// or file:/ URL", n.Mirror))
	}
	for _, p := range n.Packages {
		if !packageRE.MatchString(p) {
			errs = append(errs, fmt.Errorf("invalid package name %q", p))
		}
	}
	return errors.Join(errs...)
}

// Manifest describes a built rootfs. It is stored as JSON at ManifestPath.
type Manifest struct {
	Key      string    `json:"key"`
	Suite    string    `json:"suite"`
	Mirror   string    `json:"mirror"`
	Packages []string  `json:"packages"`
	Python   string    `json:"python,omitempty"` // what /usr/bin/python3 points to, e.g. "python3.11"
	Built    time.Time `json:"built"`
}

// ReadManifest reads the manifest of the rootfs in dir. A directory without
// one gives an error satisfying errors.Is(err, fs.ErrNotExist).
func ReadManifest(dir string) (Manifest, error) {
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, ManifestPath))
	if err != nil {
		return m, fmt.Errorf("reading image manifest: %w", err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("parsing image manifest %s: %w", filepath.Join(dir, ManifestPath), err)
	}
	if m.Key == "" {
		return m, fmt.Errorf("image manifest %s has no key", filepath.Join(dir, ManifestPath))
	}
	return m, nil
}

func writeManifest(dir string, m Manifest) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ManifestPath), append(data, '\n'), 0o644)
}

// Current reports whether dir holds a complete rootfs for spec: its manifest
// has spec's key and its /usr/bin/python3 exists.
func Current(dir string, spec Spec) (Manifest, bool) {
	m, err := ReadManifest(dir)
	if err != nil || m.Key != spec.Key() {
		return m, false
	}
	if _, err := resolveIn(dir, "usr/bin/python3"); err != nil {
		return m, false
	}
	return m, true
}

// resolveIn follows the symlinks of rel inside the root filesystem dir (an
// absolute link target is taken relative to dir, as it would be inside the
// sandbox) and returns the host path of the regular file it names.
func resolveIn(dir, rel string) (string, error) {
	p := filepath.Join(dir, rel)
	for range 16 {
		fi, err := os.Lstat(p)
		if err != nil {
			return "", err
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			if !fi.Mode().IsRegular() {
				return "", fmt.Errorf("%s is not a regular file", p)
			}
			return p, nil
		}
		target, err := os.Readlink(p)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			p = filepath.Join(dir, target)
		} else {
			p = filepath.Join(filepath.Dir(p), target)
		}
		if r, err := filepath.Rel(dir, p); err != nil || r == ".." || strings.HasPrefix(r, "../") {
			return "", fmt.Errorf("%s leaves the root filesystem", rel)
		}
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", rel)
}

func discardIfNil(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
