package topology

import (
	"fmt"
	"strings"
	"testing"
)

func TestFaults(t *testing.T) {
	f, err := OpenFabric("pgft:2;4,4;1,2;1,1")
	if err != nil {
		t.Fatal(err)
	}
	ft, err := ParseFaults(strings.NewReader("# faults\nswitch s2-0\n\nlink s1-1 s2-1  # cable\n"), "f.txt", f)
	if err != nil {
		t.Fatal(err)
	}
	nf, err := f.ApplyFaults(ft)
	if err != nil {
		t.Fatal(err)
	}
	if nf.NumLinks() != f.NumLinks()-4-1 || nf.NumVertices() != f.NumVertices() {
		t.Errorf("links %d -> %d", f.NumLinks(), nf.NumLinks())
	}
	// s1-2 lost its port 5 (to s2-0): its link to s2-1 is now graph port 5 but still physical port 6.
	v, _ := nf.Lookup("s1-2")
	if len(nf.Links(v)) != 5 || nf.PhysPort(v, 5) != 6 {
		t.Errorf("s1-2: %d ports, port 5 is physical %d", len(nf.Links(v)), nf.PhysPort(v, 5))
	}
	for _, tc := range []struct{ in, want string }{
		{"switch nope\n", "f.txt:1: unknown switch \"nope\""},
		{"\nlink s1-0 s1-1\n", "f.txt:2: no link between"},
		{"switch n3\n", "f.txt:1: \"n3\" is a node, not a switch"},
		{"cable x y\n", "f.txt:1: unknown fault kind"},
		{"link s1-0\n", "f.txt:1: want: link"},
		{"link s1-0 bogus\n", "f.txt:1: unknown element \"bogus\""},
	} {
		_, err := ParseFaults(strings.NewReader(tc.in), "f.txt", f)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseFaults(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
	// GUIDs work too.
	s, _ := f.Lookup("s2-1")
	if v, ok := f.Lookup(fmt.Sprintf("0x%016x", f.GUID(s))); !ok || v != s {
		t.Errorf("lookup by GUID failed")
	}
}
