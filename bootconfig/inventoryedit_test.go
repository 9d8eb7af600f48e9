package bootconfig

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
)

// TestInventoryEdit checks that an edit changes only what it must: comments, quoting, row order
// and the other rows' bytes stay as written.
func TestInventoryEdit(t *testing.T) {
	const in = "# the rack of s0-b0\n" +
		"name,mac,ip\n" +
		"s0-b0-n0, 52:54:00:00:00:01 ,10.0.0.1\n" +
		"# n1 is the login node\n" +
		"s0-b0-n1,52:54:00:00:00:02,\"10.0.0.2\"\n" +
		"s0-b0-n2,52:54:00:00:00:03,10.0.0.3\n" +
		"# end"
	tests := []struct {
		name string
		edit func(ed *InventoryEdit) error
		want string
	}{
		{"none", func(*InventoryEdit) error { return nil }, in},
		{"add", func(ed *InventoryEdit) error {
			return ed.Add(map[string]string{"name": "s0-b0-n3", "mac": "52:54:00:00:00:04"})
		}, "# the rack of s0-b0\nname,mac,ip\ns0-b0-n0, 52:54:00:00:00:01 ,10.0.0.1\n# n1 is the login node\n" +
			"s0-b0-n1,52:54:00:00:00:02,\"10.0.0.2\"\ns0-b0-n2,52:54:00:00:00:03,10.0.0.3\ns0-b0-n3,52:54:00:00:00:04,\n# end"},
		{"set a new column", func(ed *InventoryEdit) error {
			return ed.Set("s0-b0-n1", map[string]string{"groups": "login,io"})
		}, "# the rack of s0-b0\nname,mac,ip,groups\ns0-b0-n0,52:54:00:00:00:01 ,10.0.0.1,\n# n1 is the login node\n" +
			"s0-b0-n1,52:54:00:00:00:02,10.0.0.2,\"login,io\"\ns0-b0-n2,52:54:00:00:00:03,10.0.0.3,\n# end"},
		{"set", func(ed *InventoryEdit) error {
			return ed.Set("s0-b0-n2", map[string]string{"ip": "10.0.0.9"})
		}, strings.Replace(in, "10.0.0.3", "10.0.0.9", 1)},
		{"delete keeps the comment", func(ed *InventoryEdit) error { return ed.Delete("s0-b0-n1") },
			"# the rack of s0-b0\nname,mac,ip\ns0-b0-n0, 52:54:00:00:00:01 ,10.0.0.1\n# n1 is the login node\n" +
				"s0-b0-n2,52:54:00:00:00:03,10.0.0.3\n# end"},
		{"delete the last", func(ed *InventoryEdit) error { return ed.Delete("s0-b0-n2") },
			"# the rack of s0-b0\nname,mac,ip\ns0-b0-n0, 52:54:00:00:00:01 ,10.0.0.1\n# n1 is the login node\n" +
				"s0-b0-n1,52:54:00:00:00:02,\"10.0.0.2\"\n# end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ed, err := ParseInventoryEdit([]byte(in), "inv.csv")
			if err != nil {
				t.Fatal(err)
			}
			if err := tt.edit(ed); err != nil {
				t.Fatal(err)
			}
			got, err := ed.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, string(got)); d != "" {
				t.Errorf("edited text (-want +got):\n%s", d)
			}
			if _, err := ed.Check(testfix.MiniHierarchy(t)); err != nil {
				t.Errorf("Check: %v", err)
			}
		})
	}
}

// TestInventoryEditRefuses: an edit that would make a duplicate MAC is refused by Check, and
// Save leaves a file that changed since it was read.
func TestInventoryEditRefuses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "inv.csv")
	const in = "name,mac\ns0-b0-n0,52:54:00:00:00:01\n"
	if err := os.WriteFile(path, []byte(in), 0o640); err != nil {
		t.Fatal(err)
	}
	ed, err := ReadInventoryEdit(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := ed.Add(map[string]string{"name": "s0-b0-n1", "mac": "52:54:00:00:00:01"}); err != nil {
		t.Fatal(err)
	}
	_, err = ed.Check(testfix.MiniHierarchy(t))
	if want := "inv.csv:3: mac: 52:54:00:00:00:01 already belongs to s0-b0-n0 (line 2)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check: %v, want %q", err, want)
	}
	if err := ed.Add(map[string]string{"name": "s0-b0-n0"}); err == nil {
		t.Error("Add of a name already there: no error")
	}
	os.WriteFile(path, []byte(in+"s0-b0-n2,52:54:00:00:00:03\n"), 0o640)
	if err := ed.Save(); !errors.Is(err, ErrInventoryChanged) {
		t.Errorf("Save over a changed file: %v, want ErrInventoryChanged", err)
	}
	ed2, _ := ReadInventoryEdit(path)
	ed2.Set("s0-b0-n2", map[string]string{"groups": "gpu"})
	if err := ed2.Save(); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	got, _ := os.ReadFile(path)
	if fi.Mode().Perm() != 0o640 || string(got) != "name,mac,groups\ns0-b0-n0,52:54:00:00:00:01,\ns0-b0-n2,52:54:00:00:00:03,gpu\n" {
		t.Errorf("saved %v:\n%s", fi.Mode(), got)
	}
}

// TestInventoryGroups: the groups column splits at commas and spaces; a bad or repeated name is
// an error naming the line and the column.
func TestInventoryGroups(t *testing.T) {
	tests := []struct {
		groups string
		want   []string
		err    string
	}{
		{"", nil, ""},
		{"compute", []string{"compute"}, ""},
		{"compute, gpu rack1", []string{"compute", "gpu", "rack1"}, ""},
		{"gpu,gpu", nil, `inv.csv:2: groups: group "gpu" given twice`},
		{"a/b", nil, `inv.csv:2: groups: "a/b" is not a group name`},
	}
	for _, tt := range tests {
		t.Run(tt.groups, func(t *testing.T) {
			inv, err := ParseInventoryCSV([]byte("name,mac,groups\ns0-b0-n0,52:54:00:00:00:01,\""+tt.groups+"\"\n"), "inv.csv", testfix.MiniHierarchy(t))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, inv.Nodes[0].Groups); d != "" {
				t.Errorf("groups (-want +got):\n%s", d)
			}
		})
	}
}

// TestInventoryEditKeepsColumns: a column bootctl does not know is kept, with its values, when a
// row is changed and when a column is added; a YAML inventory is not edited.
func TestInventoryEditKeepsColumns(t *testing.T) {
	ed, err := ParseInventoryEdit([]byte("name,rack,mac\na,r1,52:54:00:00:00:01\nb,\"r 2\",52:54:00:00:00:02\n"), "inv.csv")
	if err != nil {
		t.Fatal(err)
	}
	if err := ed.Set("b", map[string]string{"ip": "10.0.0.2", "mac": "52:54:00:00:00:03"}); err != nil {
		t.Fatal(err)
	}
	got, _ := ed.Bytes()
	if d := cmp.Diff("name,rack,mac,ip\na,r1,52:54:00:00:00:01,\nb,r 2,52:54:00:00:00:03,10.0.0.2\n", string(got)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
	if _, err := ReadInventoryEdit(filepath.Join(t.TempDir(), "inv.yaml")); err == nil || !strings.Contains(err.Error(), "edits CSV inventories only") {
		t.Errorf("YAML inventory: %v", err)
	}
}
