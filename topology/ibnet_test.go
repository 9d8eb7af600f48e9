package topology

import (
	"os"
	"strings"
	"testing"
)

func TestIBNetDiscover(t *testing.T) {
	f, err := OpenFabric("testdata/fattree.topo")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Nodes()) != 4 || f.NumVertices() != 8 || f.NumLinks() != 8 {
		t.Fatalf("nodes %d vertices %d links %d", len(f.Nodes()), f.NumVertices(), f.NumLinks())
	}
	n0, ok := f.Lookup("node0 HCA-1")
	if !ok || f.GUID(n0) != 0x0002c90300c00010 || f.PortGUID(n0) != 0x0002c90300c00011 || f.LID(n0) != 5 {
		t.Errorf("node0: %v guid %x port guid %x lid %d", ok, f.GUID(n0), f.PortGUID(n0), f.LID(n0))
	}
	leaf, ok := f.Lookup("leaf0")
	if !ok || f.Level(leaf) != 0 || f.LID(leaf) != 3 {
		t.Errorf("leaf0: level %d lid %d", f.Level(leaf), f.LID(leaf))
	}
	spine, _ := f.Lookup("0x0002c90300b00002")
	if f.VertexName(spine) != "spine1" || f.Level(spine) != 1 {
		t.Errorf("spine1 by GUID: %s level %d", f.VertexName(spine), f.Level(spine))
	}
	// leaf0's physical port 4 goes to spine1.
	found := false
	for p, l := range f.Links(leaf) {
		if f.Other(l, leaf) == spine {
			found = f.PhysPort(leaf, p+1) == 4
		}
	}
	if !found {
		t.Errorf("leaf0 port 4 is not spine1")
	}
	if got := f.Link(f.Links(n0)[0]).CapacityMbps; got != 100000 {
		t.Errorf("4xEDR capacity = %v", got)
	}
}

func TestIBNetDiscoverErrors(t *testing.T) {
	good, err := os.ReadFile("testdata/fattree.topo")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(good), "\n")
	replace := func(i int, s string) string {
		c := append([]string(nil), lines...)
		c[i] = s
		return strings.Join(c, "\n")
	}
	// Line 11 (index 10) is spine0's first port line.
	for _, tc := range []struct{ in, want string }{
		{replace(10, `[1]	S-0002c90300a00001[3]`), "x.topo:11: malformed port line"},
		{replace(10, `[1]	"S-0002c90300a00001"`), "x.topo:27: S-0002c90300a00001 port 1 linked to"}, // ibsim: remote port 1
		{replace(10, `[37]	"S-0002c90300a00001"[3]`), "x.topo:11: port 37 of \"S-0002c90300b00001\", which has 36 ports"},
		{replace(10, `[1]	"S-0002c90300a00001"[3]	w=99`), "x.topo:11: link option \"w=99\""},
		{replace(10, `include "other.net"`), "x.topo:11: ibsim's include"},
		{replace(7, `Rt	2 "R-1"`), "x.topo:8: router nodes are not supported"},
		{replace(10, `[1]	"S-00000000000000ff"[3]		# "gone"`), "x.topo:29: S-0002c90300b00001 port 1 linked to S-0002c90300a00001[3] here"},
		{replace(11, lines[11]+"\n[3]\t\"S-00000000000000ff\"[1]"), "x.topo:13: link to \"S-00000000000000ff\""},
		{replace(10, `[1]	"S-0002c90300a00002"[3]		# "leaf1"`), "x.topo:"},
		{replace(10, `garbage here`), "x.topo:11: unrecognised line"},
		{replace(8, `switchguid=0xzz`), "x.topo:9: malformed GUID"},
		{"", "no Switch or Ca blocks"},
	} {
		_, err := ParseIBNetDiscover(strings.NewReader(tc.in), "x.topo")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}

func FuzzParseIBNetDiscover(f *testing.F) {
	good, _ := os.ReadFile("testdata/fattree.topo")
	f.Add(string(good))
	f.Add("Switch\t2 \"S-01\"\n[1]\t\"H-02\"[1]\nCa\t1 \"H-02\"\n[1](3)\t\"S-01\"[1]\n")
	f.Fuzz(func(t *testing.T, s string) {
		fab, err := ParseIBNetDiscover(strings.NewReader(s), "fuzz")
		if err == nil && fab.NumVertices() == 0 {
			t.Fatal("empty fabric without error")
		}
	})
}
