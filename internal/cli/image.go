package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/codemode/codemode/internal/app"
	"github.com/codemode/codemode/internal/image"
	"github.com/codemode/codemode/internal/obs"
)

// imageCmd runs "codemode image SUBCOMMAND".
func imageCmd(ctx context.Context, args []string, sio IO) error {
	if len(args) == 0 {
		return usageError{errors.New("missing subcommand: codemode image build|server|binary [flags]")}
	}
	switch args[0] {
	case "build":
		return imageBuild(ctx, args[1:], sio)
	case "server", "binary":
		return imageLoad(ctx, args[0], args[1:], sio)
	case "-h", "--help", "help":
		fmt.Fprintln(sio.Stdout, "usage: codemode image build|server|binary [flags]   (codemode image SUBCOMMAND -h for the flags)")
		return nil
	}
	return usageError{fmt.Errorf("unknown subcommand %q: want build, server or binary", args[0])}
}

// imageLoad builds codemode's server image from this executable ("server")
// or an image of one static executable ("binary") and loads it into an
// engine, unless the engine has it already. Stdout gets the tag.
func imageLoad(ctx context.Context, sub string, args []string, sio IO) error {
	fs := flag.NewFlagSet("image "+sub, flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	fs.Usage = func() {
		if sub == "server" {
			fmt.Fprint(fs.Output(), `usage: codemode image server [flags]

Builds an image of codemode's server: this codemode executable, or --binary
(either must be statically linked), as the entrypoint, the CA certificates and a non-root
user (65532), and loads it into podman, docker or containerd without any
registry. Prints the tag.

`)
		} else {
			fmt.Fprint(fs.Output(), `usage: codemode image binary --binary FILE --tag TAG [flags]

Builds an image holding just one statically linked executable as its
entrypoint (e.g. a Kubernetes pause program for a node without a registry)
and loads it into podman, docker or containerd. Prints the tag.

`)
		}
		fs.PrintDefaults()
	}
	engine := fs.String("engine", "", "engine to load into: podman, docker or containerd (ctr, namespace k8s.io) (default: podman if installed, else docker)")
	engineCmd := fs.String("engine-cmd", "", `engine command line, split at spaces; overrides --engine (e.g. "ctr --address /run/k/containerd.sock --namespace k8s.io")`)
	tag := fs.String("tag", "", "image tag")
	var caCerts *string
	binary := fs.String("binary", "", "the static executable (required)")
	if sub == "server" {
		*tag = "localhost/codemode:latest"
		fs.Lookup("tag").DefValue = *tag
		fs.Lookup("binary").Usage = "the static codemode executable (default: this one)"
		caCerts = fs.String("ca-certs", "/etc/ssl/certs/ca-certificates.crt", "CA bundle to put into the image")
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *tag == "" || (sub == "binary" && *binary == "") {
		return usageError{errors.New("--binary and --tag are required")}
	}
	path := *binary
	if path != "" && !filepath.IsAbs(path) {
		path = filepath.Join(sio.Cwd, path)
	}
	argv, err := image.EngineCommand(*engine, *engineCmd, exec.LookPath)
	if err != nil {
		return usageError{err}
	}
	if argv == nil {
		return usageError{errors.New("no engine to load into: install podman, docker or containerd, or pass --engine-cmd")}
	}
	var cfg image.Config
	var layer func(context.Context, io.Writer) error
	if sub == "server" {
		if path == "" {
			if path, err = os.Executable(); err != nil {
				return err
			}
		}
		cfg, layer, err = image.ServerImage(path, *caCerts)
	} else {
		cfg, layer, err = image.BinaryImage(path)
	}
	if err != nil {
		return err
	}
	s, _, err := loadSettings(map[string]string{}, sio)
	if err != nil {
		return err
	}
	log := obs.NewLogger(sio.Stderr, s.LogLevel)
	if _, err := (image.Engine{Command: argv, Logger: log}).Load(ctx, *tag, cfg, layer); err != nil {
		return err
	}
	fmt.Fprintln(sio.Stdout, *tag)
	return nil
}

// imageBuild builds the Python rootfs (cached by its inputs) and imports it
// into a container engine. Stdout gets the rootfs path and then the image
// tag, one per line, for scripts; progress goes to stderr.
func imageBuild(ctx context.Context, args []string, sio IO) error {
	fs := flag.NewFlagSet("image build", flag.ContinueOnError)
	fs.SetOutput(sio.Stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: codemode image build [flags]

Builds a Python root filesystem from Debian packages with debootstrap (needs
root) and imports it into podman or docker, without any container registry.
Both steps are skipped when their result is already current. Prints the
rootfs directory and the image tag on stdout, one per line (only the
directory with --engine none). The directory also works as --rootfs of the
native backend.

`)
		fs.PrintDefaults()
	}
	engine := fs.String("engine", "", "engine to import into: podman, docker, containerd (ctr, namespace k8s.io) or none (default: podman if installed, else docker, else none)")
	engineCmd := fs.String("engine-cmd", "", `engine command line, split at spaces; overrides --engine (e.g. "podman --runtime runc" or "/usr/bin/docker -H unix:///run/d.sock")`)
	tagFlag := fs.String("tag", "", "image tag (default localhost/codemode-python:SUITE)")
	rootfs := fs.String("rootfs", "", "directory to build and keep the rootfs in (default STATE-DIR/images/SUITE)")
	packages := fs.String("packages", strings.Join(image.DefaultPackages, ","), "Debian packages to install, comma-separated (python3 is always added)")
	suite := fs.String("suite", image.DefaultSuite, "Debian suite")
	mirror := fs.String("mirror", image.DefaultMirror, "Debian mirror")
	fs.String("state-dir", "", app.SettingsRegistry().Doc("state-dir"))
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	argv, err := image.EngineCommand(*engine, *engineCmd, exec.LookPath)
	if err != nil {
		return usageError{err}
	}
	spec := image.Spec{Suite: *suite, Mirror: *mirror, Packages: strings.Split(*packages, ",")}
	if err := spec.Validate(); err != nil {
		return usageError{err}
	}
	spec = spec.Normalized()

	settingFlags := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "state-dir" {
			settingFlags[f.Name] = f.Value.String()
		}
	})
	s, _, err := loadSettings(settingFlags, sio)
	if err != nil {
		return err
	}
	log := obs.NewLogger(sio.Stderr, s.LogLevel)

	dir := *rootfs
	if dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(sio.Cwd, dir)
	}
	dir, tag, err := app.BuildImage(ctx, s, app.ImageBuild{Spec: spec, Dir: dir, Tag: *tagFlag, Engine: argv}, log)
	if dir != "" {
		fmt.Fprintln(sio.Stdout, dir)
	}
	if err != nil {
		return err
	}
	if tag != "" {
		fmt.Fprintln(sio.Stdout, tag)
	}
	return nil
}
