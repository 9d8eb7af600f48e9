package boltstore

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
	bolt "go.etcd.io/bbolt"
)

// TestAttackCorruptStatePage: a nodes.db corrupted at offset 20480 panicked with a bbolt stack
// trace. Each page of a state file is corrupted in turn: opening gives one error naming the file
// (for every page in use, bbolt's own page map says which), never a panic; --recover keeps the file
// aside and restores what it can read.
func TestAttackCorruptStatePage(t *testing.T) {
	sf := newSoundStateFile(t)
	detected := 0
	for _, id := range sf.pagesToCorrupt() {
		dir := sf.corruptCopy(t, id)
		if !sf.openRefused(t, dir, id) {
			continue
		}
		detected++
		if id == sf.target {
			checkRecoverPage(t, dir, id)
		}
	}
	t.Logf("%d of %d pages in use; %d corruptions detected", len(sf.used), sf.high, detected)
}

// stateFilePage is the page size of the state files the tests write (bbolt's default).
const stateFilePage = 4096

// soundStateFile is a state file of 200 records, sound, as TestAttackCorruptStatePage corrupts it
// page by page.
type soundStateFile struct {
	data   []byte
	used   map[int]bool // the pages in use (branch or leaf), by bbolt's page map
	high   int          // the high-water mark: the pages past it hold nothing
	target int          // the page --recover is tried on: offset 20480's, or the first in use after it
}

func newSoundStateFile(t *testing.T) *soundStateFile {
	src := t.TempDir()
	writeStateRecords(t, src, 200)
	data, err := os.ReadFile(filepath.Join(src, StateFile))
	if err != nil {
		t.Fatal(err)
	}
	sf := &soundStateFile{data: data, used: usedPages(t, filepath.Join(src, StateFile)), target: 20480 / stateFilePage}
	for !sf.used[sf.target] && sf.target*stateFilePage < len(data) {
		sf.target++
	}
	meta, err := soundMeta(data)
	if err != nil {
		t.Fatal(err)
	}
	sf.high = int(meta.high)
	return sf
}

// pagesToCorrupt lists the pages below the high-water mark that are in use, the target, the
// first page and a sample of the free ones (every fourth).
func (sf *soundStateFile) pagesToCorrupt() []int {
	var ids []int
	for id := 2; id < sf.high; id++ {
		if id == 2 || id%4 == 0 || sf.used[id] || id == sf.target {
			ids = append(ids, id)
		}
	}
	return ids
}

// corruptCopy writes, in a directory of its own, the state file with the first 64 bytes of page
// id overwritten, and returns the directory.
func (sf *soundStateFile) corruptCopy(t *testing.T, id int) string {
	dir := t.TempDir()
	data := slices.Clone(sf.data)
	for i := id * stateFilePage; i < id*stateFilePage+64; i++ {
		data[i] = 0xff
	}
	if err := os.WriteFile(filepath.Join(dir, StateFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openRefused opens the store in dir, whose page id is corrupt, and says whether it was refused:
// a page in use must be; the refusal is one line, a DamagedError naming the file and --recover.
func (sf *soundStateFile) openRefused(t *testing.T, dir string, id int) bool {
	st, err := Open(dir)
	if err == nil {
		st.Close()
		if sf.used[id] {
			t.Errorf("page %d (in use) corrupted: opened without a word", id)
		}
		return false
	}
	var de *DamagedError
	if !errors.As(err, &de) || de.Path != filepath.Join(dir, StateFile) || !strings.Contains(err.Error(), "--recover") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("page %d corrupted: %v", id, err)
	}
	return true
}

// checkRecoverPage recovers the store in dir, whose page id is corrupt: the damaged file is kept
// aside under a name with the time, and the store opens again with as many records as the
// recovery says it restored (of the 200).
func checkRecoverPage(t *testing.T, dir string, id int) {
	path := filepath.Join(dir, StateFile)
	rec, err := Recover(dir, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Damaged != path+".damaged-20260102T030405Z" || rec.Recovered+rec.Lost > 200 {
		t.Errorf("recovery %+v", rec)
	}
	if _, err := os.Stat(rec.Damaged); err != nil {
		t.Errorf("damaged copy: %v", err)
	}
	st, err := Open(dir)
	if err != nil {
		t.Fatalf("after --recover: %v", err)
	}
	got, err := st.Load()
	st.Close()
	if err != nil || len(got) != rec.Recovered {
		t.Errorf("after --recover: %d records (%v), recovery said %d", len(got), err, rec.Recovered)
	}
	t.Logf("page %d corrupted: recovered %d of 200 records, %d lost", id, rec.Recovered, rec.Lost)
}

// usedPages returns the pages of a bbolt file that are branch or leaf pages in use (not free), by
// bbolt's own page map.
func usedPages(t *testing.T, path string) map[int]bool {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, PreLoadFreelist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	used := map[int]bool{}
	err = db.View(func(tx *bolt.Tx) error {
		for id := 2; ; id++ {
			p, err := tx.Page(id)
			if err != nil || p == nil {
				return err
			}
			if p.Type == "branch" || p.Type == "leaf" {
				used[id] = true
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return used
}

// writeStateRecords saves n node records with some history into dir's state file.
func writeStateRecords(t testing.TB, dir string, n int) {
	t.Helper()
	st, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var nodes []nodestate.NodeStatus
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		ns := nodestate.NodeStatus{Name: fmt.Sprintf("node%03d", i), MAC: fmt.Sprintf("52:54:00:00:%02x:%02x", i/256, i%256), State: nodestate.Healthy, Since: at,
			Times: map[nodestate.State]time.Time{nodestate.Discover: at, nodestate.Healthy: at}}
		for j := range 4 {
			ns.History = append(ns.History, nodestate.Transition{From: nodestate.State(j), To: nodestate.State(j + 1), Event: nodestate.EvOffer, At: at, Detail: strings.Repeat("d", 20)})
		}
		nodes = append(nodes, ns)
	}
	if err := st.Save(nodes); err != nil {
		t.Fatal(err)
	}
}
