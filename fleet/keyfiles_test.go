package fleet

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteKeyFiles: the three files are written with their modes, the public key verifies what
// the private one signs as the same KeyID, and an existing file is never replaced.
func TestWriteKeyFiles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "op")
	kf, err := WriteKeyFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		mode fs.FileMode
	}{{kf.Private, 0o600}, {kf.Public, 0o644}, {kf.Secret, 0o600}} {
		st, err := os.Stat(f.path)
		if err != nil || st.Mode().Perm() != f.mode {
			t.Errorf("%s: %v, mode %v, want %v", f.path, err, st.Mode().Perm(), f.mode)
		}
	}
	priv, err := LoadSigningKey(kf.Private)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := LoadTrustedKeys(kf.Public)
	if err != nil || len(pub) != 1 || KeyID(pub[0]) != kf.Key || !pub[0].Equal(priv.Public()) {
		t.Errorf("public key %v (%v) does not match the private key or key id %s", pub, err, kf.Key)
	}
	var b strings.Builder
	if err := kf.WriteText(&b); err != nil || !strings.HasPrefix(b.String(), "key "+kf.Key+": private "+path+" (keep it off the servers); to every server: "+path+".pub") {
		t.Errorf("text: %q, %v", b.String(), err)
	}
	before, _ := os.ReadFile(kf.Private)
	if _, err := WriteKeyFiles(path); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second write: %v, want fs.ErrExist", err)
	}
	if after, _ := os.ReadFile(kf.Private); string(after) != string(before) {
		t.Error("the private key was replaced")
	}
	if _, err := WriteKeyFiles(filepath.Join(t.TempDir(), "no", "dir")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v, want fs.ErrNotExist", err)
	}
}
