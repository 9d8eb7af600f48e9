package images

import (
	"os"
	"strings"
	"testing"
)

// TestListingAndVerifyReport: the table and CSV of a store's profiles, and VerifyAll's report of a
// tampered store, as bootctl image list and verify show them.
func TestListingAndVerifyReport(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := WriteProfileTable(&b, s.List()); err != nil || b.String() != "no profiles\n" {
		t.Errorf("empty store: %q, %v", b.String(), err)
	}
	files := writeFiles(t, map[string]string{"vmlinuz": "kernel bytes", "initrd": "initrd bytes"})
	if _, err := s.Add(Profile{Name: "a", Kernel: "vmlinuz", Initrd: "initrd", Cmdline: "quiet"}, files); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(Profile{Name: "b", Kernel: "vmlinuz"}, map[string]string{"vmlinuz": files["vmlinuz"]}); err != nil {
		t.Fatal(err)
	}
	if got := s.ProfileNames(); strings.Join(got, ",") != "a,b" {
		t.Errorf("ProfileNames = %q", got)
	}
	rows := ProfilesCSV(s.List())
	if len(rows) != 3 || strings.Join(rows[1], ",") != "a,vmlinuz,initrd,2,24,"+s.List()[0].Files["vmlinuz"].SHA256+",quiet,12,12" {
		t.Errorf("CSV %q", rows)
	}
	b.Reset()
	if err := WriteProfileTable(&b, s.List()); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(b.String(), "\n"); len(lines) != 4 || !strings.Contains(lines[2], "b  vmlinuz") || !strings.HasSuffix(lines[2], "-") {
		t.Errorf("table:\n%s", b.String())
	}
	if r := s.VerifyAll(); !r.OK || r.Files != 3 || len(r.Problems) != 0 {
		t.Errorf("intact store: %+v", r)
	}
	blob, err := s.BlobPath("a", "initrd")
	if err != nil {
		t.Fatal(err)
	}
	must(t, os.Remove(blob))
	r := s.VerifyAll()
	b.Reset()
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	if r.OK || len(r.Problems) != 1 || !strings.HasPrefix(b.String(), `profile "a" file "initrd" (blob `) || !strings.HasSuffix(b.String(), "3 files checked, 1 problems\n") {
		t.Errorf("tampered store: %+v\n%s", r, b.String())
	}
}
