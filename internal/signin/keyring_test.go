package signin

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"
)

// TestKeyring: with a keyring the file keeps no secret and loading brings
// them back; a keyring that refuses leaves everything in the file.
func TestKeyring(t *testing.T) {
	tests := []struct {
		name       string
		refuse     error // the keyring's answer to every request
		wantInFile bool  // the secrets are in the file
	}{
		{name: "keyring"},
		{name: "keyring refuses", refuse: errors.New("locked"), wantInFile: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.refuse != nil {
				keyring.MockInitWithError(tc.refuse)
			} else {
				keyring.MockInit()
			}
			s := NewStore(t.TempDir(), osKeyring{})
			rec := &Record{ClientID: "c", ClientSecret: "client-secret", Token: &oauth2.Token{AccessToken: "access-secret", RefreshToken: "refresh-secret", TokenType: "Bearer"}}
			if err := s.Save("remote", rec); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(s.path("remote"))
			for _, secret := range []string{"client-secret", "access-secret", "refresh-secret"} {
				if strings.Contains(string(data), secret) != tc.wantInFile {
					t.Errorf("%s in the file: %v, want %v", secret, !tc.wantInFile, tc.wantInFile)
				}
			}
			got, err := s.Load("remote")
			if err != nil || got.Token.AccessToken != "access-secret" || got.Token.RefreshToken != "refresh-secret" || got.ClientSecret != "client-secret" {
				t.Fatalf("load: %+v %v", got, err)
			}
			if tc.refuse == nil {
				if _, err := s.Delete("remote"); err != nil {
					t.Fatal(err)
				}
				if _, err := keyring.Get(keyringService, "remote"); !errors.Is(err, keyring.ErrNotFound) {
					t.Errorf("the keyring still has the entry: %v", err)
				}
			}
		})
	}
}

func TestOSKeyringChoice(t *testing.T) {
	if runtime.GOOS == "darwin" || runtime.GOOS == "windows" {
		t.Skip("the keyring is always there")
	}
	if OSKeyring([]string{"HOME=/h"}) != nil {
		t.Error("a keyring without a D-Bus session")
	}
	if OSKeyring([]string{"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1/bus"}) == nil {
		t.Error("no keyring with a D-Bus session")
	}
}
