package signin

import (
	"errors"
	"runtime"
	"strings"

	"github.com/zalando/go-keyring"
)

// Secrets keeps the secret part of each server's record (its tokens and
// client secret) in the OS keyring rather than in the record's file.
type Secrets interface {
	Get(server string) (string, error)
	Set(server, secret string) error
	Delete(server string) error
}

// keyringService names codemode's entries in the OS keyring.
const keyringService = "codemode"

// OSKeyring returns the OS keyring: the macOS Keychain, the Windows
// Credential Manager, or the Secret Service of a desktop session (one with
// a D-Bus session bus: elsewhere asking for it could start a bus daemon);
// nil where there is none. environ is the process environment.
func OSKeyring(environ []string) Secrets {
	switch runtime.GOOS {
	case "darwin", "windows":
		return osKeyring{}
	}
	for _, kv := range environ {
		if v, ok := strings.CutPrefix(kv, "DBUS_SESSION_BUS_ADDRESS="); ok && v != "" {
			return osKeyring{}
		}
	}
	return nil
}

type osKeyring struct{}

func (osKeyring) Get(server string) (string, error) { return keyring.Get(keyringService, server) }

func (osKeyring) Set(server, secret string) error { return keyring.Set(keyringService, server, secret) }

func (osKeyring) Delete(server string) error {
	if err := keyring.Delete(keyringService, server); err != nil && !errors.Is(err, keyring.ErrNotFound) {
		return err
	}
	return nil
}
