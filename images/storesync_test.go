package images

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFollowSeesAnotherWriter: a store that follows its manifest (a running server's) sees a
// profile another store on the same directory (bootctl image add) replaced, added or deleted at
// its next read, and is told what changed.
func TestFollowSeesAnotherWriter(t *testing.T) {
	dir := t.TempDir()
	writer, err := Create(dir)
	must(t, err)
	v1 := writeFiles(t, map[string]string{"vmlinuz": "kernel", "initrd.img": "initrd v1"})
	v2 := writeFiles(t, map[string]string{"vmlinuz": "kernel", "initrd.img": "initrd v2"})
	prof := Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img"}
	_, err = writer.Add(prof, v1)
	must(t, err)

	server, err := Open(dir)
	must(t, err)
	var changes []Change
	server.Follow(func(c Change, err error) {
		must(t, err)
		changes = append(changes, c)
	})
	initrdSum := func() string {
		t.Helper()
		p, err := server.Get("default")
		must(t, err)
		return p.Files["initrd.img"].SHA256
	}
	if got := initrdSum(); got != sha256Hex("initrd v1") {
		t.Fatalf("before the replace: initrd %s", got)
	}
	_, err = writer.Add(prof, v2)
	must(t, err)
	if got := initrdSum(); got != sha256Hex("initrd v2") {
		t.Fatalf("after the replace: initrd %s, want v2's", got)
	}
	_, err = writer.Add(Profile{Name: "rescue", Kernel: "vmlinuz"}, map[string]string{"vmlinuz": v1["vmlinuz"]})
	must(t, err)
	_, err = writer.Delete("default")
	must(t, err)
	if _, err := server.Get("default"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted profile: %v", err)
	}
	want := []Change{{Replaced: []string{"default"}}, {Added: []string{"rescue"}, Removed: []string{"default"}}}
	if diff := cmp.Diff(want, changes); diff != "" {
		t.Fatalf("changes (-want +got):\n%s", diff)
	}
}

// TestFollowKeepsProfilesOnBadManifest: a manifest that does not parse is reported once and the
// profiles read before it stay served.
func TestFollowKeepsProfilesOnBadManifest(t *testing.T) {
	s := newTestStore(t)
	var errs []error
	s.Follow(func(_ Change, err error) { errs = append(errs, err) })
	before := s.List()
	must(t, os.WriteFile(filepath.Join(s.Dir(), manifestName), []byte("{not json"), 0o644))
	for range 3 {
		if diff := cmp.Diff(before, s.List()); diff != "" {
			t.Fatalf("profiles changed after a bad manifest:\n%s", diff)
		}
	}
	if len(errs) != 1 || errs[0] == nil {
		t.Fatalf("notified %v, want one error", errs)
	}
}

// TestConcurrentAddsKeepEveryProfile: stores in one directory (processes running bootctl image
// add at once) each add profiles; none is lost to another's manifest write.
func TestConcurrentAddsKeepEveryProfile(t *testing.T) {
	dir := t.TempDir()
	files := writeFiles(t, map[string]string{"vmlinuz": "kernel"})
	var wg sync.WaitGroup
	for w := range 4 {
		st, err := Create(dir)
		must(t, err)
		wg.Go(func() {
			for i := range 5 {
				if _, err := st.Add(Profile{Name: fmt.Sprintf("p%d-%d", w, i), Kernel: "vmlinuz"}, files); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	st, err := Open(dir)
	must(t, err)
	if n := len(st.List()); n != 20 {
		t.Fatalf("%d profiles after 20 concurrent adds", n)
	}
}

// TestGC: gc removes exactly the blobs no profile references (a replaced profile's old initrd,
// a deleted profile's files), says how many bytes, and --dry-run removes nothing.
func TestGC(t *testing.T) {
	dir := t.TempDir()
	st, err := Create(dir)
	must(t, err)
	v1 := writeFiles(t, map[string]string{"vmlinuz": "kernel", "initrd.img": "initrd v1"})
	v2 := writeFiles(t, map[string]string{"vmlinuz": "kernel", "initrd.img": "initrd v2!"})
	other := writeFiles(t, map[string]string{"bzImage": "other kernel"})
	prof := Profile{Name: "default", Kernel: "vmlinuz", Initrd: "initrd.img"}
	_, err = st.Add(prof, v1)
	must(t, err)
	_, err = st.Add(Profile{Name: "other", Kernel: "bzImage"}, map[string]string{"bzImage": other["bzImage"]})
	must(t, err)
	_, err = st.Add(prof, v2)
	must(t, err)
	_, err = st.Delete("other")
	must(t, err)

	wantRemoved := []Blob{{SHA256: sha256Hex("initrd v1"), Size: 9}, {SHA256: sha256Hex("other kernel"), Size: 12}}
	if wantRemoved[0].SHA256 > wantRemoved[1].SHA256 {
		wantRemoved[0], wantRemoved[1] = wantRemoved[1], wantRemoved[0]
	}
	for _, tc := range []struct {
		dryRun  bool
		removed []Blob
	}{
		{dryRun: true, removed: wantRemoved},
		{dryRun: false, removed: wantRemoved},
		{dryRun: false, removed: []Blob{}},
	} {
		res, err := st.GC(tc.dryRun)
		must(t, err)
		want := GCResult{DryRun: tc.dryRun, Removed: tc.removed, Kept: 2}
		for _, b := range tc.removed {
			want.Bytes += b.Size
		}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Fatalf("GC(dryRun=%v) (-want +got):\n%s", tc.dryRun, diff)
		}
		var text strings.Builder
		must(t, res.WriteText(&text))
		wantText := fmt.Sprintf("removed %d blobs, ", len(tc.removed))
		if tc.dryRun {
			wantText = "would remove blob " + sha256Hex("other kernel") + " (0.0 MB)\n" // the largest first
		}
		if !strings.Contains(text.String(), wantText) || !strings.HasSuffix(text.String(), "; 2 blobs referenced by profiles kept\n") {
			t.Errorf("GC(dryRun=%v) text:\n%s\nwant %q", tc.dryRun, text.String(), wantText)
		}
	}
	if problems := st.Verify(); len(problems) != 0 {
		t.Fatalf("after gc: %v", problems)
	}
	if _, err := st.Delete("other"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting a missing profile: %v", err)
	}
}
