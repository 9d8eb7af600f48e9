package fleet

import (
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/bootfabric/bootfabric/internal/atomicfile"
	"go.etcd.io/etcd/api/v3/mvccpb"
)

// MaxSerialAhead is how far a revision's serial (the time it was signed, in nanoseconds since
// 1970) may be ahead of the clock that checks it. Serials only grow, so one far in the future,
// from a skewed clock or a leaked key, would otherwise hold every later revision back until that
// time, for ever at 2^64-1; servers and operators are expected to keep their clocks within this.
const MaxSerialAhead = 5 * time.Minute

var (
	// ErrRollback is returned by Trust.Check for a signed revision older than one applied before:
	// someone with write access to etcd wrote an old configuration back.
	ErrRollback = errors.New("configuration revision is older than one applied before")
	// ErrSerialAhead is returned by CheckRevision for a revision whose serial is more than
	// MaxSerialAhead ahead of the clock.
	ErrSerialAhead = errors.New("configuration revision's serial is too far in the future")
)

// CheckRevision reports why a server that trusts keys, its clock at now, refuses rev whatever it
// applied before, or nil: rev is unsigned, signed by no key of keys, or its serial is more than
// MaxSerialAhead ahead of now. Servers (Trust.Check) and the commands that write revisions use it
// alike, so that a revision the servers would refuse is never built on.
func CheckRevision(rev ConfigRevision, keys []ed25519.PublicKey, now time.Time) error {
	if err := rev.Verify(keys); err != nil {
		return err
	}
	limit := uint64(now.Add(MaxSerialAhead).UnixNano())
	if rev.Serial > limit {
		return fmt.Errorf("%w: serial %s, %s ahead of this clock (%s), limit %v", ErrSerialAhead,
			SerialString(rev.Serial), aheadString(rev.Serial, now), now.UTC().Format(time.RFC3339), MaxSerialAhead)
	}
	return nil
}

// SerialString shows a serial as the signing time it is, or as a number when it is no time.
func SerialString(s uint64) string {
	if s > math.MaxInt64 {
		return fmt.Sprintf("%d", s)
	}
	return time.Unix(0, int64(s)).UTC().Format(time.RFC3339Nano)
}

// aheadString says how far serial s is ahead of now.
func aheadString(s uint64, now time.Time) string {
	d := s - uint64(now.UnixNano())
	if d > math.MaxInt64 {
		return "more than 292 years"
	}
	return time.Duration(d).Round(time.Second).String()
}

// Trust decides which configuration revisions a server applies: those CheckRevision passes under
// its trusted keys whose serial is not below the newest it applied. It keeps that revision in a
// file, so that a restart neither forgets it nor is left with nothing to serve while the current
// revision in etcd is refused (Last).
type Trust struct {
	keys []ed25519.PublicKey
	path string
	now  func() time.Time
	last appliedRevision
}

// appliedRevision is the file Trust keeps: the newest revision applied. Files of earlier versions
// hold the serial and sha256 only.
type appliedRevision struct {
	Serial uint64 `json:"serial"`
	SHA256 string `json:"sha256"`
	// The revision itself, as etcd stored it (decodeConfig reads it again), with what etcd said
	// of it: Last serves it while the current revision is refused.
	Fleet    string `json:"fleet,omitempty"`
	Revision int64  `json:"revision,omitempty"`
	Number   int64  `json:"number,omitempty"`
	Value    []byte `json:"value,omitempty"`
}

// OpenTrust returns the Trust of a server that trusts keys and keeps its record at path. A
// missing file is a server that never applied a revision; a damaged one is an error that names
// it, never a fresh start (that would accept any old revision).
func OpenTrust(keys []ed25519.PublicKey, path string) (*Trust, error) {
	if len(keys) == 0 {
		return nil, errors.New("no trusted configuration keys")
	}
	t := &Trust{keys: keys, path: path, now: time.Now}
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

// Keys returns the trusted keys.
func (t *Trust) Keys() []ed25519.PublicKey { return t.keys }

// Check reports why rev must not be applied, or nil. The revision applied last passes again (a
// server restarting reads it first), even when its serial is ahead of a clock set back since.
func (t *Trust) Check(rev ConfigRevision) error {
	if rev.Serial == t.last.Serial && rev.SHA256 == t.last.SHA256 {
		return rev.Verify(t.keys)
	}
	if err := CheckRevision(rev, t.keys, t.now()); err != nil {
		return err
	}
	if rev.Serial <= t.last.Serial {
		return fmt.Errorf("%w: serial %s, applied %s", ErrRollback, SerialString(rev.Serial), SerialString(t.last.Serial))
	}
	return nil
}

// Last returns the revision applied last, as it was stored in etcd, when this file holds it and
// it is of fleet and still trusted (a key removed since takes its revisions with it).
func (t *Trust) Last(fleet string) (ConfigRevision, bool) {
	l := t.last
	if len(l.Value) == 0 || l.Fleet != fleet {
		return ConfigRevision{}, false
	}
	rev, err := decodeConfig(fleet, &mvccpb.KeyValue{Value: l.Value, ModRevision: l.Revision, Version: l.Number})
	if err != nil || rev.Serial != l.Serial || rev.SHA256 != l.SHA256 || rev.Verify(t.keys) != nil {
		return ConfigRevision{}, false
	}
	return rev, true
}

// Record notes that rev is applied, durably: written to a temporary file, synced and renamed.
func (t *Trust) Record(rev ConfigRevision) error {
	next := appliedRevision{Serial: rev.Serial, SHA256: rev.SHA256, Fleet: rev.fleet, Revision: rev.Revision, Number: rev.Number, Value: rev.value}
	if next.Serial == t.last.Serial && next.SHA256 == t.last.SHA256 && next.Revision == t.last.Revision && len(t.last.Value) > 0 {
		return nil
	}
	data, _ := json.Marshal(next)
	if err := os.MkdirAll(filepath.Dir(t.path), 0o755); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(t.path, append(data, '\n'), 0o600); err != nil {
		return err
	}
	t.last = next
	return nil
}
