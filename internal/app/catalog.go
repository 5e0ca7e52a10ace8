package app

import (
	"context"
	"log/slog"
	osexec "os/exec"

	"github.com/codemode/codemode/internal/catalog"
	"github.com/codemode/codemode/internal/settings"
)

// LoadCatalog reads the catalogs the settings name (registry listings are
// cached in the state directory).
func LoadCatalog(ctx context.Context, s settings.Settings, log *slog.Logger) (*catalog.Catalog, error) {
	return catalog.Load(ctx, s.Catalogs, catalog.LoadOptions{CacheDir: s.StateDir, Logger: log.With("component", "catalog")})
}

// CatalogLaunch says how catalog entries start on this host: npm packages
// from the settings' npm prefix or through npx, secrets from environ.
func CatalogLaunch(s settings.Settings, environ []string) catalog.LaunchOptions {
	return catalog.LaunchOptions{NPMPrefix: s.NPMPrefix, LookPath: osexec.LookPath, Lookup: lookupIn(environ)}
}
