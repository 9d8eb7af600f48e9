package boltstore

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpenStore opens arbitrary bytes as the state file: a sound store, or one error (a
// *DamagedError naming the file for damage) and never a panic; Recover then always leaves a
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
	if st, err := Open(check); err != nil {
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
		st, err := Open(dir)
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
		if _, err := Recover(dir, time.Unix(0, 0)); err != nil {
			t.Fatalf("recover after %v: %v", err, err)
		}
		st, err = Open(dir)
		if err != nil {
			t.Fatalf("after recover: %v", err)
		}
		st.Close()
	})
}
