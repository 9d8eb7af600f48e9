package routing

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/bootfabric/bootfabric/topology"
)

// ErrNoIdentity is returned (wrapped) by WriteLFT when the fabric lacks the port GUIDs or LIDs
// that OpenSM needs to apply the tables to the right ports.
var ErrNoIdentity = errors.New("fabric identities unknown")

// WriteLFT writes the tables in the layout of OpenSM's own LFT dump (opensm-lfts.dump, written by
// OpenSM's dump_ucast_lfts when routing is logged), which OpenSM's file routing engine loads with
// `opensm -R file -U FILE`:
//
//	Unicast lids [0-8] of switch Lid 3 guid 0x0002c90300a00001 ('leaf0'):
//	0x0001 003 # Switch portguid 0x0002c90300b00001: 'spine0'
//	0x0003 000 # Switch portguid 0x0002c90300a00001: 'leaf0'
//	0x0005 001 # Channel Adapter portguid 0x0002c90300c00011: 'node0 HCA-1'
//	...
//	8 lids dumped
//
// The LID range is decimal and runs to the fabric's highest LID; entries are the physical port
// numbers of f; names are the node descriptions; the last line gives the highest LID (as OpenSM's
// does), not a count. With a fabric's real identities the file equals, byte for byte, the dump
// OpenSM writes after loading it. The file engine finds each entry's port by its port GUID, so a
// fabric without its own GUIDs and LIDs is refused (ErrNoIdentity): those tables would load
// without complaint and route to the wrong ports.
//
// The engines route to endpoints; entries for the other switches' LIDs are least-hop routes
// (lowest port among the shortest), listed when the fabric has at most maxSwitchRoutes switches.
func WriteLFT(w io.Writer, f *topology.Fabric, t *Tables) error {
	if f.Graph != t.g {
		return fmt.Errorf("lft dump: tables were computed for another graph")
	}
	if why := f.MissingIdentity(); why != "" {
		return fmt.Errorf("%w: the topology has %s", ErrNoIdentity, why)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	type ent struct {
		lid int
		sw  int32 // switch index, or -1 for a destination
		d   int32
	}
	var ents []ent
	maxLID := 0
	for v := range topology.VertexID(f.NumVertices()) {
		if f.HasLID(v) {
			maxLID = max(maxLID, f.LID(v))
		}
	}
	for s, v := range t.switches {
		ents = append(ents, ent{f.LID(v), int32(s), -1})
	}
	for d, v := range t.dests {
		ents = append(ents, ent{f.LID(v), -1, int32(d)})
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].lid < ents[j].lid })
	swPort := switchRoutes(t)
	S := len(t.switches)
	for _, s := range switchOrder(f, t) {
		v := t.switches[s]
		if len(f.Links(v)) == 0 {
			continue // a failed switch (--faults): not in the running fabric
		}
		fmt.Fprintf(bw, "Unicast lids [0-%d] of switch Lid %d guid 0x%016x ('%s'):\n", maxLID, f.LID(v), f.GUID(v), f.Desc(v))
		for _, e := range ents {
			var port int
			var dv topology.VertexID
			switch {
			case e.sw == int32(s):
				port, dv = 0, v
			case e.sw >= 0:
				if swPort == nil || swPort[s*S+int(e.sw)] == 0 {
					continue
				}
				port, dv = f.PhysPort(v, int(swPort[s*S+int(e.sw)])), t.switches[e.sw]
			default:
				p := t.Port(s, int(e.d))
				if p == NoPort {
					continue
				}
				port, dv = f.PhysPort(v, p), t.dests[e.d]
			}
			fmt.Fprintf(bw, "0x%04x %03d # %s portguid 0x%016x: '%s'\n", e.lid, port, nodeType(t.g, dv), f.PortGUID(dv), f.Desc(dv))
		}
		fmt.Fprintf(bw, "%d lids dumped\n", maxLID)
	}
	return bw.Flush()
}

// nodeType is OpenSM's name for the node type (ib_get_node_type_str).
func nodeType(g *topology.Graph, v topology.VertexID) string {
	if g.Kind(v) == topology.Switch {
		return "Switch"
	}
	return "Channel Adapter"
}

// maxSwitchRoutes bounds the fabrics whose switch-to-switch routes the dump computes (one BFS per
// switch).
const maxSwitchRoutes = 4096

// switchRoutes returns, for switch indices s and u, the graph port of s on a least-hop path to u
// (0: none), or nil for large fabrics.
func switchRoutes(t *Tables) []uint16 {
	g := t.g
	S := len(t.switches)
	if S > maxSwitchRoutes {
		return nil
	}
	out := make([]uint16, S*S)
	dist := make([]int32, S)
	var q []int32
	for u := 0; u < S; u++ {
		for i := range dist {
			dist[i] = -1
		}
		dist[u] = 0
		q = append(q[:0], int32(u))
		for i := 0; i < len(q); i++ {
			x := q[i]
			for _, l := range g.Links(t.switches[x]) {
				w := t.swIdx[g.Other(l, t.switches[x])]
				if w >= 0 && dist[w] < 0 {
					dist[w] = dist[x] + 1
					q = append(q, w)
				}
			}
		}
		for s := 0; s < S; s++ {
			if dist[s] <= 0 {
				continue
			}
			for p, l := range g.Links(t.switches[s]) {
				if w := t.swIdx[g.Other(l, t.switches[s])]; w >= 0 && dist[w] == dist[s]-1 {
					out[s*S+u] = uint16(p + 1)
					break
				}
			}
		}
	}
	return out
}
