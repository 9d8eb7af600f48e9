package topology

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The testdata files ibsim-2sw2path4hca.* are ibsim's own example net file and what the tools
// printed for it under ibsim 0.10 and OpenSM 3.3.23: ibnetdiscover, OpenSM's guid2lid cache and
// `saquery NR LID` for each LID.

type ident struct {
	Desc           string
	GUID, PortGUID uint64
	LID            int
}

func identities(f *Fabric) map[string]ident {
	m := map[string]ident{}
	for v := range VertexID(f.NumVertices()) {
		m[f.Desc(v)] = ident{f.Desc(v), f.GUID(v), f.PortGUID(v), f.LID(v)}
	}
	return m
}

// TestIBSimNetGUIDs checks that the GUIDs read from ibsim's net file are those ibsim gave the
// ports (as ibnetdiscover saw them), and that the file has no LIDs.
func TestIBSimNetGUIDs(t *testing.T) {
	net, err := OpenFabric("testdata/ibsim-2sw2path4hca.net")
	if err != nil {
		t.Fatal(err)
	}
	disc, err := OpenFabric("testdata/ibsim-2sw2path4hca.ibnetdiscover")
	if err != nil {
		t.Fatal(err)
	}
	if net.NumVertices() != 6 || net.NumLinks() != 6 || len(net.Nodes()) != 4 {
		t.Fatalf("net: %d vertices %d links %d nodes", net.NumVertices(), net.NumLinks(), len(net.Nodes()))
	}
	got, want := identities(net), identities(disc)
	for name, w := range want {
		g := got[name]
		if g.GUID != w.GUID || g.PortGUID != w.PortGUID {
			t.Errorf("%s: GUID %#x port GUID %#x, ibsim gave %#x %#x", name, g.GUID, g.PortGUID, w.GUID, w.PortGUID)
		}
	}
	if !net.HasGUIDs() || net.HasLID(0) {
		t.Errorf("net: HasGUIDs %v HasLID %v", net.HasGUIDs(), net.HasLID(0))
	}
	if why := net.MissingIdentity(); !strings.Contains(why, "no LID for 6 of its ports") {
		t.Errorf("net MissingIdentity = %q", why)
	}
	if why := disc.MissingIdentity(); why != "" {
		t.Errorf("ibnetdiscover MissingIdentity = %q", why)
	}
}

// TestWithLIDs gives the net file the identities of each of the three layouts; all must agree
// with ibnetdiscover's.
func TestWithLIDs(t *testing.T) {
	disc, err := OpenFabric("testdata/ibsim-2sw2path4hca.ibnetdiscover")
	if err != nil {
		t.Fatal(err)
	}
	want := identities(disc)
	for _, tc := range []struct{ file, format string }{
		{"testdata/ibsim-2sw2path4hca.guid2lid", "guid2lid"},
		{"testdata/ibsim-2sw2path4hca.ibnetdiscover", "ibnetdiscover"},
		{"testdata/ibsim-2sw2path4hca.saquery", "saquery"},
	} {
		m := mustLIDs(t, tc.file)
		if m.Format != tc.format || m.Len() != 6 {
			t.Errorf("%s: format %s, %d ports", tc.file, m.Format, m.Len())
		}
		net, err := OpenFabric("testdata/ibsim-2sw2path4hca.net")
		if err != nil {
			t.Fatal(err)
		}
		nf, err := net.WithLIDs(m)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if diff := cmp.Diff(want, identities(nf)); diff != "" {
			t.Errorf("%s: identities (-ibnetdiscover +net with lids):\n%s", tc.file, diff)
		}
		if why := nf.MissingIdentity(); why != "" {
			t.Errorf("%s: MissingIdentity = %q", tc.file, why)
		}
	}
}

func mustLIDs(t *testing.T, file string) *LIDMap {
	t.Helper()
	fh, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	m, err := ParseLIDs(fh, file)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestWithLIDsErrors(t *testing.T) {
	pgft, err := OpenFabric("pgft:2;2,2;1,2;1,1")
	if err != nil {
		t.Fatal(err)
	}
	if why := pgft.MissingIdentity(); !strings.Contains(why, "no port GUIDs or LIDs of its own") {
		t.Errorf("pgft MissingIdentity = %q", why)
	}
	// guid2lid names ports by GUID, which a spec does not have.
	_, err = pgft.WithLIDs(mustLIDs(t, "testdata/ibsim-2sw2path4hca.guid2lid"))
	if err == nil || !strings.Contains(err.Error(), "the topology has no GUIDs of its own") {
		t.Errorf("pgft with guid2lid: %v", err)
	}
	// The spec's names are not the fabric's.
	_, err = pgft.WithLIDs(mustLIDs(t, "testdata/ibsim-2sw2path4hca.saquery"))
	if err == nil || !strings.Contains(err.Error(), "are not in it by port GUID or node description") {
		t.Errorf("pgft with saquery: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{"0x0000000000100004 0x0004\n", "x:1: unrecognised line"},
		{"0x0000000000100004 0xc000 0xc000\n", "x:1: LID 0xc000 out of the unicast range"},
		{"\n\n", "x: no ports"},
		{"NodeRecord dump:\n\t\tlid.....................2\n", "x:1: NodeRecord without port_guid or lid"},
		{"NodeRecord dump:\n\t\tport_guid...............0xzz\n", "x:2: port_guid \"0xzz\""},
		{"Hca\t1 \"h\"\n[1]\t\"s\"[1]\n\nSwitch\t4 \"s\"\n[1]\t\"h\"[1]\n", "x: \"h\" has no LID"},
	} {
		_, err := ParseLIDs(strings.NewReader(tc.in), "x")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseLIDs(%q) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestIBSimGUIDRules checks ibsim's GUID counters: switchguid=/caguid= set the next GUID, a CA
// reserves one GUID per port, "+N" is relative to the last base.
func TestIBSimGUIDRules(t *testing.T) {
	in := `# comment
Switch	4 "s1"
[1]	"h1"[1]	w=2 s=1
[2]	"h2"[2]

caguid=0x1000
Hca	2 "h1"
[1]	"s1"[1]

Ca	2 "h2"	# "second host"
[2]	"s1"[2]	lid 9

switchguid+5
Switch	4 "s2"
`
	f, err := ParseIBNetDiscover(strings.NewReader(in), "x.net")
	if err != nil {
		t.Fatal(err)
	}
	got := identities(f)
	want := map[string]ident{
		"s1":          {"s1", 0x200000, 0x200000, 11}, // LIDs not given: numbered after the highest given
		"h1":          {"h1", 0x1000, 0x1001, 10},
		"second host": {"second host", 0x1003, 0x1005, 9},
		"s2":          {"s2", 0x200005, 0x200005, 12},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identities (-want +got):\n%s", diff)
	}
	h2, _ := f.Lookup("second host")
	if !f.HasLID(h2) || f.HasLID(0) {
		t.Errorf("HasLID: h2 %v h1 %v", f.HasLID(h2), f.HasLID(0))
	}
	if c := f.Link(f.Links(0)[0]).CapacityMbps; c != 8000 {
		t.Errorf("w=2 s=1 (4x SDR) capacity %v, want 8000", c)
	}
}

// TestWriteIBSimNet writes a PGFT as an ibsim net file and reads it back: same vertices, names,
// ports and links.
func TestWriteIBSimNet(t *testing.T) {
	f, err := OpenFabric("pgft:2;2,2;1,2;1,1")
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := WriteIBSimNet(&buf, f); err != nil {
		t.Fatal(err)
	}
	back, err := ParseIBNetDiscover(strings.NewReader(buf.String()), "x.net")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	type link struct {
		A, B         string
		PortA, PortB int
	}
	links := func(f *Fabric) map[link]bool {
		m := map[link]bool{}
		for l := range LinkID(f.NumLinks()) {
			k := f.Link(l)
			a, b := f.Desc(k.A), f.Desc(k.B)
			pa, pb := f.LinkPort(k.A, l), f.LinkPort(k.B, l)
			if a > b {
				a, b, pa, pb = b, a, pb, pa
			}
			m[link{a, b, pa, pb}] = true
		}
		return m
	}
	if diff := cmp.Diff(links(f), links(back)); diff != "" {
		t.Errorf("links (-spec +net):\n%s\n%s", diff, buf.String())
	}
	if len(back.Nodes()) != len(f.Nodes()) {
		t.Errorf("nodes %d, want %d", len(back.Nodes()), len(f.Nodes()))
	}
}

func FuzzParseLIDs(f *testing.F) {
	for _, name := range []string{"guid2lid", "saquery", "ibnetdiscover"} {
		b, _ := os.ReadFile("testdata/ibsim-2sw2path4hca." + name)
		f.Add(string(b))
	}
	net, _ := os.ReadFile("testdata/ibsim-2sw2path4hca.net")
	f.Fuzz(func(t *testing.T, s string) {
		m, err := ParseLIDs(strings.NewReader(s), "fuzz")
		if err != nil {
			return
		}
		fab, err := ParseIBNetDiscover(strings.NewReader(string(net)), "net")
		if err != nil {
			t.Fatal(err)
		}
		if nf, err := fab.WithLIDs(m); err == nil && nf.MissingIdentity() != "" && fab.LMC() == 0 {
			t.Fatalf("WithLIDs succeeded but %s", nf.MissingIdentity())
		}
	})
}
