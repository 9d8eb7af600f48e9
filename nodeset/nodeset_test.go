package nodeset

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	dir := t.TempDir()
	list := filepath.Join(dir, "rack1")
	os.WriteFile(list, []byte("# rack 1\nnode[01-02]  node05\nnode01 # again\n"), 0o644)
	nested := filepath.Join(dir, "all")
	os.WriteFile(nested, []byte("@"+list+"\nlogin1\n"), 0o644)
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{"node01", []string{"node01"}},
		{"node[001-003]", []string{"node001", "node002", "node003"}},
		{"node[8-11]", []string{"node8", "node9", "node10", "node11"}},
		{"node[08-11]", []string{"node08", "node09", "node10", "node11"}},
		{"s0-b[0-1]-n[0-1]", []string{"s0-b0-n0", "s0-b0-n1", "s0-b1-n0", "s0-b1-n1"}},
		{"n[1,3,5-6]", []string{"n1", "n3", "n5", "n6"}},
		{"a,b, c,,a", []string{"a", "b", "c"}},
		{"n[2-3],n[1-2]", []string{"n2", "n3", "n1"}},
		{"@" + list, []string{"node01", "node02", "node05"}},
		{"@" + nested + ",x", []string{"node01", "node02", "node05", "login1", "x"}},
		{"", nil},
	} {
		got, err := Expand(tc.expr)
		if err != nil {
			t.Errorf("%q: %v", tc.expr, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.expr, diff)
		}
	}
}

func TestExpandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("ok1\nn[3-1]\n"), 0o644)
	loop := filepath.Join(dir, "loop")
	os.WriteFile(loop, []byte("@"+loop+"\n"), 0o644)
	for _, tc := range []struct{ expr, want string }{
		{"n[3-1]", "runs backwards"},
		{"n[1-", "'[' without ']'"},
		{"n1]", "']' without '['"},
		{"n[[1]]", "inside brackets"},
		{"n[]", "empty brackets"},
		{"n[a-b]", `"a" is not a number`},
		{"n[0-99999999]", "more than"},
		{"n[0-999]-m[0-999]-k[0-9]", "more than"},
		{"n 1", "not allowed"},
		{"a/b", "not allowed"},
		{"@" + filepath.Join(dir, "none"), "no such file"},
		{"@" + bad, bad + ":2: "},
		{"@" + loop, "nest more than 8 deep"},
	} {
		_, err := Expand(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want an error with %q", tc.expr, err, tc.want)
		}
	}
}

// FuzzExpand: any expression expands or fails with an error, never panics, and never gives more
// than MaxNodes names or a duplicate.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"node[01-10]", "s0-b[0-3]-n[0-7],x", "n[1,3,5-7]", "[", "a,,b", "n[0-9][0-9]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		if strings.Contains(expr, "@") {
			return // files are TestExpand's business
		}
		names, err := Expand(expr)
		if err != nil {
			return
		}
		if len(names) > MaxNodes {
			t.Fatalf("%d names", len(names))
		}
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] || n == "" {
				t.Fatalf("name %q twice or empty in %q", n, expr)
			}
			seen[n] = true
		}
	})
}
