package fleet

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrRollback is returned by Trust.Check for a signed revision older than one applied before:
// someone with write access to etcd wrote an old configuration back.
var ErrRollback = errors.New("configuration revision is older than one applied before")

// Trust decides which configuration revisions a server applies: those signed by one of its
// trusted keys whose serial is not below the newest it applied, which it keeps in a file so that
// a restart does not forget it.
type Trust struct {
	keys []ed25519.PublicKey
	path string
	last appliedRevision
}

// appliedRevision is the file Trust keeps: the newest revision applied.
type appliedRevision struct {
	Serial uint64 `json:"serial"`
	SHA256 string `json:"sha256"`
}

// OpenTrust returns the Trust of a server that trusts keys and keeps its record at path. A
// missing file is a server that never applied a revision; a damaged one is an error that names
// it, never a fresh start (that would accept any old revision).
func OpenTrust(keys []ed25519.PublicKey, path string) (*Trust, error) {
	if len(keys) == 0 {
		return nil, errors.New("no trusted configuration keys")
	}
	t := &Trust{keys: keys, path: path}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return t, nil
	case err != nil:
		return nil, err
	}
	if err := json.Unmarshal(data, &t.last); err != nil || len(t.last.SHA256) != 64 {
		return nil, fmt.Errorf("%s: damaged record of the last configuration applied (%v): restore it, or remove it to accept any signed revision", path, err)
	}
	return t, nil
}

// Check reports why rev must not be applied, or nil. The revision applied last passes again (a
// server restarting reads it first).
func (t *Trust) Check(rev ConfigRevision) error {
	if err := rev.Verify(t.keys); err != nil {
		return err
	}
	if rev.Serial < t.last.Serial || rev.Serial == t.last.Serial && rev.SHA256 != t.last.SHA256 {
		return fmt.Errorf("%w: serial %d, applied %d", ErrRollback, rev.Serial, t.last.Serial)
	}
	return nil
}

// Record notes that rev is applied, durably: written to a temporary file, synced and renamed.
func (t *Trust) Record(rev ConfigRevision) error {
	next := appliedRevision{Serial: rev.Serial, SHA256: rev.SHA256}
	if next == t.last {
		return nil
	}
	data, _ := json.Marshal(next)
	if err := os.MkdirAll(filepath.Dir(t.path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(t.path), ".applied-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), t.path); err != nil {
		return err
	}
	t.last = next
	return nil
}
