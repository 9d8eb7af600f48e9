package routing

import (
	"bytes"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

func TestWriteLFT(t *testing.T) {
	f, err := topology.OpenFabric("../topology/testdata/fattree.topo")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := Dmodc{}.Compute(f.Graph)
	if err != nil {
		t.Fatal(err)
	}
	if r := Check(tb, CheckOptions{UpDown: true, Congestion: true}); !r.Valid {
		t.Fatalf("%v", r)
	}
	var buf bytes.Buffer
	if err := WriteLFT(&buf, f, tb); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"Unicast lids [0x0-0x8] of switch Lid 3 guid 0x0002c90300a00001 (leaf0):\n  Lid  Out   Destination\n       Port     Info \n",
		"0x0003 000 : (Switch portguid 0x0002c90300a00001: 'leaf0')\n",
		"0x0005 001 : (Channel Adapter portguid 0x0002c90300c00011: 'node0 HCA-1')\n",
		"0x0006 002 : (Channel Adapter portguid 0x0002c90300c00021: 'node1 HCA-1')\n",
		"0x0001 003 : (Switch portguid 0x0002c90300b00001: 'spine0')\n",
		"0x0002 004 : (Switch portguid 0x0002c90300b00002: 'spine1')\n",
		"0x0004 003 : (Switch portguid 0x0002c90300a00002: 'leaf1')\n",
		"8 valid lids dumped \n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dump lacks %q:\n%s", want, out)
		}
	}
	// leaf0 sends node2 (lid 7) and node3 (lid 8) up through physical ports 3 and 4 (one each).
	if !strings.Contains(out, "0x0007 003 : (Channel Adapter") || !strings.Contains(out, "0x0008 004 : (Channel Adapter") {
		t.Errorf("leaf0 up ports:\n%s", out)
	}
}
