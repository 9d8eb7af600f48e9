package routing

import (
	"errors"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bootfabric/bootfabric/topology"
)

// setsFabric is a 2-level fat-tree of 16 nodes (n0..n15) on 4 leaves (s1-0..s1-3).
func setsFabric(t testing.TB) *topology.Fabric {
	t.Helper()
	fab, err := topology.OpenFabric("pgft:2;4,4;1,2")
	if err != nil {
		t.Fatal(err)
	}
	return fab
}

// openFiles serves @FILE items from a map.
func openFiles(files map[string]string) func(string) (io.ReadCloser, error) {
	return func(p string) (io.ReadCloser, error) {
		text, ok := files[p]
		if !ok {
			return nil, &os.PathError{Op: "open", Path: p, Err: os.ErrNotExist}
		}
		return io.NopCloser(strings.NewReader(text)), nil
	}
}

func TestParseGroupSets(t *testing.T) {
	fab := setsFabric(t)
	opt := GroupSetOptions{Seed: 1, Open: openFiles(map[string]string{
		"g.txt": "# two groups\nfirst: n0 n5 n9\nn1 n2 n14 # anonymous\n",
	})}
	// Group counts on 16 nodes: a RxC grid gives R rows and C columns; an AxBxC grid gives
	// B*C + A*C + A*B lines and A+B+C planes; leaders:4 gives 4 groups of 4 and their leaders' group.
	for _, c := range []struct {
		spec string
		want []GroupSet
	}{
		{"grid2d", []GroupSet{{"grid2d", 4 + 4}}},
		{"grid2d:2x8", []GroupSet{{"grid2d:2x8", 2 + 8}}},
		{"grid3d:2x2x4", []GroupSet{{"grid3d:2x2x4", 8 + 8 + 4}}},
		{"planes:2x2x4", []GroupSet{{"planes:2x2x4", 2 + 2 + 4}}},
		{"leaders:4", []GroupSet{{"leaders:4", 4 + 1}}},
		{"leaders", []GroupSet{{"leaders", 1}}},
		{"random:7:3", []GroupSet{{"random:7:3", 7}}},
		{"@g.txt", []GroupSet{{"@g.txt", 2}}},
		{" grid2d , random:2:16,@g.txt", []GroupSet{{"grid2d", 8}, {"random:2:16", 2}, {"@g.txt", 2}}},
	} {
		groups, sets, err := ParseGroupSets(fab, c.spec, opt)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if diff := cmp.Diff(c.want, sets); diff != "" {
			t.Errorf("%q: sets (-want +got):\n%s", c.spec, diff)
		}
		n := 0
		for _, s := range c.want {
			n += s.Groups
		}
		if len(groups) != n {
			t.Errorf("%q: %d groups, sets say %d", c.spec, len(groups), n)
		}
	}
}

func TestParseGroupSetsMembers(t *testing.T) {
	fab := setsFabric(t)
	groups, _, err := ParseGroupSets(fab, "grid2d:2x8,@g.txt", GroupSetOptions{Open: openFiles(map[string]string{"g.txt": "first: n0 n5 0xb00fab0000000003\nn1 n2\n"})})
	if err != nil {
		t.Fatal(err)
	}
	v := func(name string) topology.VertexID {
		x, ok := fab.Lookup(name)
		if !ok {
			t.Fatalf("no %s", name)
		}
		return x
	}
	// Row 0 of the 2x8 grid is n0..n7, column 0 is n0 and n8; file groups keep their names, or
	// get FILE:LINE.
	want := map[string][]topology.VertexID{
		"row0":    {v("n0"), v("n1"), v("n2"), v("n3"), v("n4"), v("n5"), v("n6"), v("n7")},
		"col0":    {v("n0"), v("n8")},
		"first":   {v("n0"), v("n5"), v("0xb00fab0000000003")},
		"g.txt:2": {v("n1"), v("n2")},
	}
	got := map[string][]topology.VertexID{}
	for _, g := range groups {
		if _, ok := want[g.Name]; ok {
			got[g.Name] = g.Members
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
}

func TestParseGroupSetsErrors(t *testing.T) {
	fab := setsFabric(t)
	opt := GroupSetOptions{Open: openFiles(map[string]string{
		"unknown.txt": "n0 n1\nn2 nope\n",
		"empty.txt":   "g1: n0\ng2:  # nothing\n",
		"switch.txt":  "n0 s1-0\n",
		"none.txt":    "# only a comment\n\n",
	})}
	for _, c := range []struct{ spec, set, want string }{
		{"circles", "", `"circles" is not grid2d[:RxC], grid3d[:AxBxC], planes[:AxBxC], leaders[:K], random:N:SIZE, servers or @FILE`},
		{"grid2d,", "", `"" is not grid2d[:RxC], grid3d[:AxBxC], planes[:AxBxC], leaders[:K], random:N:SIZE, servers or @FILE`},
		{"grid2d:3", "grid2d:3", `dimensions "3": want 2 sizes separated by x`},
		{"grid2d:0x4", "grid2d:0x4", `dimensions "0x4": "0" is not a positive integer`},
		{"grid2d:3x5", "grid2d:3x5", "grid2d 3x5: needs 15 endpoints, have 16"},
		{"grid3d:2x2", "grid3d:2x2", `dimensions "2x2": want 3 sizes separated by x`},
		{"planes:1x1x1", "planes:1x1x1", "grid3d 1x1x1: needs 1 endpoints, have 16"},
		{"leaders:x", "leaders:x", `fanout "x" is not an integer`},
		{"leaders:1", "leaders:1", "leaders: fanout must be at least 2, got 1"},
		{"random:5", "random:5", "want random:N:SIZE, e.g. random:1000:16"},
		{"random:5:17", "random:5:17", "random groups: size must be 1..16 and count non-negative, got 5 groups of 17"},
		{"servers", "servers", "pgft:2;4,4;1,2;1,1 has no boot servers and named levels (use a machine such as sunway)"},
		{"@missing.txt", "@missing.txt", "open missing.txt: file does not exist"},
		{"@unknown.txt", "@unknown.txt", `unknown.txt:2: unknown endpoint "nope"`},
		{"@empty.txt", "@empty.txt", "empty.txt:2: group g2 is empty"},
		{"@switch.txt", "@switch.txt", `switch.txt:1: "s1-0" is a switch, not an endpoint`},
		{"@none.txt", "@none.txt", "none.txt: no groups"},
	} {
		_, _, err := ParseGroupSets(fab, c.spec, opt)
		var se *GroupSetError
		if !errors.As(err, &se) {
			t.Errorf("%q: err = %v, want a *GroupSetError", c.spec, err)
			continue
		}
		if se.Set != c.set || se.Err.Error() != c.want {
			t.Errorf("%q: set %q, err %q; want %q, %q", c.spec, se.Set, se.Err, c.set, c.want)
		}
	}
}

func TestParseGroupSetsServers(t *testing.T) {
	fab, err := topology.OpenFabric("mini")
	if err != nil {
		t.Fatal(err)
	}
	g := fab.Graph
	// Every node on the last server: one group, that server and every node.
	last := int32(len(g.Servers()) - 1)
	opt := GroupSetOptions{ServerOf: func(*topology.Graph) ([]int32, error) {
		s := make([]int32, len(g.Nodes()))
		for i := range s {
			s[i] = last
		}
		return s, nil
	}}
	groups, sets, err := ParseGroupSets(fab, "servers", opt)
	if err != nil {
		t.Fatal(err)
	}
	want := append([]topology.VertexID{g.Servers()[last]}, g.Nodes()...)
	if len(groups) != 1 || len(sets) != 1 || sets[0].Groups != 1 {
		t.Fatalf("groups %v, sets %v: want one", groups, sets)
	}
	if diff := cmp.Diff(want, groups[0].Members); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	// The mapping's errors come back as they are.
	bad := errors.New("no such mapping")
	if _, _, err := ParseGroupSets(fab, "servers", GroupSetOptions{ServerOf: func(*topology.Graph) ([]int32, error) { return nil, bad }}); err != bad {
		t.Errorf("ServerOf's error: got %v, want it unchanged", err)
	}
	if _, _, err := ParseGroupSets(fab, "servers", GroupSetOptions{}); err == nil || !strings.Contains(err.Error(), "servers: no mapping") {
		t.Errorf("no ServerOf: err = %v", err)
	}
}

// FuzzParseGroups: the groups parser never panics, and what it accepts names endpoints only.
func FuzzParseGroups(f *testing.F) {
	for _, s := range []string{"g: n0 n1\n", "n0 n5 # c\n\nx:\n", "a:b: n1\n", "0xb00fab0000000001 n2\n", "s1-0\n"} {
		f.Add(s)
	}
	fab := setsFabric(f)
	f.Fuzz(func(t *testing.T, text string) {
		gs, err := ParseGroups(strings.NewReader(text), "fuzz.txt", fab)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.txt") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, g := range gs {
			if len(g.Members) == 0 {
				t.Fatalf("empty group %q accepted", g.Name)
			}
			for _, v := range g.Members {
				if fab.Kind(v) == topology.Switch {
					t.Fatalf("switch %d accepted as a member", v)
				}
			}
		}
	})
}

// FuzzParseGroupSets: a group-set list never panics; what it accepts adds up, and what it
// refuses is a *GroupSetError.
func FuzzParseGroupSets(f *testing.F) {
	for _, s := range []string{"grid2d", "grid2d:4x4,leaders:3", "grid3d:2x2x4", "planes", "random:3:4", "@g.txt", "servers", "x:y:z", ",", "random:1:0"} {
		f.Add(s)
	}
	fab := setsFabric(f)
	opt := GroupSetOptions{Seed: 1, Open: openFiles(map[string]string{"g.txt": "a: n0 n1\nn2 n3\n"})}
	f.Fuzz(func(t *testing.T, spec string) {
		// Random sets draw what they are asked for, up to RandomGroups' ceilings: bound the count
		// further so that the fuzzer does not spend its time allocating.
		for _, item := range strings.Split(spec, ",") {
			arg, ok := strings.CutPrefix(strings.TrimSpace(item), "random:")
			if n, _, _ := strings.Cut(arg, ":"); ok && len(n) > 4 {
				t.Skip("random count beyond 9999")
			}
		}
		groups, sets, err := ParseGroupSets(fab, spec, opt)
		if err != nil {
			var se *GroupSetError
			if !errors.As(err, &se) {
				t.Fatalf("%q: error %v is not a *GroupSetError", spec, err)
			}
			return
		}
		n := 0
		for _, s := range sets {
			n += s.Groups
		}
		if n != len(groups) || len(sets) != strings.Count(spec, ",")+1 {
			t.Fatalf("%q: %d groups in %d sets, sets say %d", spec, len(groups), len(sets), n)
		}
	})
}
