package app

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/codemode/codemode/internal/image"
	"github.com/codemode/codemode/internal/settings"
)

// ImageBuild is what `codemode image build` asks for.
type ImageBuild struct {
	Spec   image.Spec // validated and normalized
	Dir    string     // where the rootfs is built and kept; "" = STATE-DIR/images/SUITE
	Tag    string     // the image's tag; "" = localhost/codemode-python:SUITE
	Engine []string   // the engine command line to import into; nil = build only
}

// BuildImage builds the Python rootfs unless it is current, then imports it
// into the engine unless the engine has it. It returns the rootfs directory
// once the rootfs is current (also when the import then fails) and the tag
// once the engine has the image.
func BuildImage(ctx context.Context, s settings.Settings, req ImageBuild, log *slog.Logger) (dir, tag string, err error) {
	dir, tag = req.Dir, req.Tag
	if dir == "" {
		dir = filepath.Join(s.StateDir, "images", req.Spec.Suite)
	}
	if tag == "" {
		tag = "localhost/codemode-python:" + req.Spec.Suite
	}
	if _, _, err := image.Build(ctx, dir, req.Spec, &image.BuildOptions{Logger: log}); err != nil {
		return "", "", err
	}
	if req.Engine == nil {
		return dir, "", nil
	}
	if _, err := (image.Engine{Command: req.Engine, Logger: log}).Import(ctx, dir, tag); err != nil {
		return dir, "", err
	}
	return dir, tag, nil
}
