package nodestate

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzDecodeNode: a saved record decodes to a node named by its key in a known state, or is an
// error; a decoded record encodes and decodes to itself.
func FuzzDecodeNode(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	good, _ := json.Marshal(NodeStatus{Name: "node00", MAC: "52:54:00:00:00:00", State: Healthy, Since: at,
		Times: map[State]time.Time{Discover: at}, History: []Transition{{From: Pending, To: Discover, Event: EvDiscover, At: at}},
		Health: &Health{Status: "ok", Details: json.RawMessage(`{"a":1}`), At: at}, HistoryDropped: 3, RebootRequested: true})
	f.Add([]byte("node00"), good)
	f.Add([]byte("node01"), good)
	f.Add([]byte("node00"), []byte(`{"name":"node00","state":"sleepy"}`))
	f.Add([]byte("node00"), []byte(`{"name":"node00","state":"healthy","last_event":"nope"}`))
	f.Add([]byte("node00"), []byte(`{"name":"node00","times":{"bogus":"2026-01-01T00:00:00Z"}}`))
	f.Add([]byte("version"), []byte("1"))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		n, err := DecodeNode(k, v)
		if err != nil {
			return
		}
		if n.Name != string(k) || n.State >= numStates {
			t.Fatalf("%q: decoded %q in state %d", k, n.Name, n.State)
		}
		enc, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("%q: re-encoding: %v", k, err)
		}
		m, err := DecodeNode(k, enc)
		if err != nil || m.Name != n.Name || m.State != n.State || m.Attempt != n.Attempt {
			t.Fatalf("%q: round trip: %v %+v", k, err, m)
		}
	})
}

// FuzzOpenStore opens arbitrary bytes as the state file: a sound store, or one error (a
// *DamagedError naming the file for damage) and never a panic; RecoverStore then always leaves a
// store that opens.
func FuzzOpenStore(f *testing.F) {
	dir := f.TempDir()
	writeStateRecords(f, dir, 20)
	valid, err := os.ReadFile(filepath.Join(dir, StateFile))
	if err != nil {
		f.Fatal(err)
	}
	// bbolt grows the file 16 MiB at a time; the pages past the high-water mark hold nothing, and a
	// small seed keeps the fuzzer fast.
	m, err := soundMeta(valid)
	if err != nil {
		f.Fatal(err)
	}
	valid = valid[:int(m.high)*m.psize]
	check := f.TempDir()
	if err := os.WriteFile(filepath.Join(check, StateFile), valid, 0o644); err != nil {
		f.Fatal(err)
	}
	if st, err := OpenStore(check); err != nil {
		f.Fatalf("the valid seed does not open: %v", err)
	} else {
		st.Close()
	}
	f.Add(valid)
	f.Add([]byte{})
	f.Add(valid[:4096])
	f.Add(valid[:len(valid)/2])
	for _, off := range []int{0, 4096 + 16, 2 * 4096, 3 * 4096, 5 * 4096} {
		if off+64 <= len(valid) {
			bad := bytes.Clone(valid)
			copy(bad[off:], bytes.Repeat([]byte{0xff}, 64))
			f.Add(bad)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, StateFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		st, err := OpenStore(dir)
		if err == nil {
			_, err = st.Load()
			st.Close()
			if err != nil {
				t.Fatalf("opened, then Load: %v", err)
			}
			return
		}
		var de *DamagedError
		if errors.As(err, &de) && de.Path != path {
			t.Fatalf("damage of %s named %s", path, de.Path)
		}
		if _, err := RecoverStore(dir, time.Unix(0, 0)); err != nil {
			t.Fatalf("recover after %v: %v", err, err)
		}
		st, err = OpenStore(dir)
		if err != nil {
			t.Fatalf("after recover: %v", err)
		}
		st.Close()
	})
}
