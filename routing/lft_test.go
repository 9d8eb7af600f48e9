package routing

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/bootfabric/bootfabric/topology"
)

// TestWriteLFTOpenSMLayout compares the dump with OpenSM's own: testdata/fattree-ibsim.* are the
// ibnetdiscover output of ibsim 0.10 simulating topology/testdata/fattree.topo, and the
// opensm-lfts.dump that OpenSM 3.3.23 wrote (-D 0x43) after loading bootctl's dmodc dump of it
// with -R file. The dump must equal it byte for byte.
func TestWriteLFTOpenSMLayout(t *testing.T) {
	f, err := topology.OpenFabric("testdata/fattree-ibsim.ibnetdiscover")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Dmodc{}.Compute(f.Graph)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteLFT(&buf, f, tb); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/fattree-ibsim.opensm-lfts.dump")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("dump differs from OpenSM's (-opensm +bootctl):\n%s", diff)
	}
}

// TestWriteLFTRefused: a spec has no GUIDs or LIDs of its own, an ibsim net file no LIDs; their
// dumps would load into OpenSM without complaint and route to the wrong ports.
func TestWriteLFTRefused(t *testing.T) {
	for _, tc := range []struct{ topo, want string }{
		{"pgft:2;2,2;1,2;1,1", "no port GUIDs or LIDs of its own"},
		{"../topology/testdata/ibsim-2sw2path4hca.net", "no LID for 6 of its ports"},
	} {
		f, err := topology.OpenFabric(tc.topo)
		if err != nil {
			t.Fatal(err)
		}
		tb, err := MinHop{}.Compute(f.Graph)
		if err != nil {
			t.Fatal(err)
		}
		err = WriteLFT(&bytes.Buffer{}, f, tb)
		if !errors.Is(err, ErrNoIdentity) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrNoIdentity and %q", tc.topo, err, tc.want)
		}
	}
}

// identified gives a spec's fabric made-up identities through a saquery NodeRecord dump, the way
// --lids gives a simulated fabric's.
func identified(t testing.TB, spec string, faults string) *topology.Fabric {
	t.Helper()
	f, err := topology.OpenFabric(spec)
	if err != nil {
		t.Fatal(err)
	}
	var saq strings.Builder
	for v := range topology.VertexID(f.NumVertices()) {
		g := 0x300000 + 4*uint64(v)
		pg := g + 1
		if f.Kind(v) == topology.Switch {
			pg = g
		}
		fmt.Fprintf(&saq, "NodeRecord dump:\n\t\tlid.....................%d\n\t\tnode_guid...............0x%016x\n\t\tport_guid...............0x%016x\n\t\tNodeDescription.........%s\n", v+1, g, pg, f.Desc(v))
	}
	m, err := topology.ParseLIDs(strings.NewReader(saq.String()), "saquery")
	if err != nil {
		t.Fatal(err)
	}
	if faults != "" {
		ft, err := topology.ParseFaults(strings.NewReader(faults), "faults", f)
		if err != nil {
			t.Fatal(err)
		}
		if f, err = f.ApplyFaults(ft); err != nil {
			t.Fatal(err)
		}
	}
	if f, err = f.WithLIDs(m); err != nil {
		t.Fatal(err)
	}
	return f
}
