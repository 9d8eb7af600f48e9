package routing

import (
	"bufio"
	"fmt"
	"io"
	"sort"

	"github.com/bootfabric/bootfabric/topology"
)

// WriteLFT writes the tables in the text layout of the infiniband-diags LFT dump (ibroute,
// dump_lfts.sh), which OpenSM's tables can be compared with line by line:
//
//	Unicast lids [0x0-0x2a] of switch Lid 17 guid 0xb00fab0000000011 (s1-0):
//	  Lid  Out   Destination
//	       Port     Info
//	0x0001 001 : (Channel Adapter portguid 0xb00fab0000000001: 'n0')
//	0x0011 000 : (Switch portguid 0xb00fab0000000011: 's1-0')
//	...
//	18 valid lids dumped
//
// Ports are the physical port numbers of f. The engines route to endpoints; entries for the other
// switches' LIDs are least-hop routes (lowest port among the shortest), as OpenSM gives switch
// LIDs, listed when the fabric has at most maxSwitchRoutes switches.
func WriteLFT(w io.Writer, f *topology.Fabric, t *Tables) error {
	if f.Graph != t.g {
		return fmt.Errorf("lft dump: tables were computed for another graph")
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	type ent struct {
		lid int
		sw  int32 // switch index, or -1 for a destination
		d   int32
	}
	var ents []ent
	maxLID := 0
	for s, v := range t.switches {
		ents = append(ents, ent{f.LID(v), int32(s), -1})
		maxLID = max(maxLID, f.LID(v))
	}
	for d, v := range t.dests {
		ents = append(ents, ent{f.LID(v), -1, int32(d)})
		maxLID = max(maxLID, f.LID(v))
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].lid < ents[j].lid })
	caType := func(v topology.VertexID) string {
		if t.g.Kind(v) == topology.Switch {
			return "Switch"
		}
		return "Channel Adapter"
	}
	swPort := switchRoutes(t)
	S := len(t.switches)
	for s, v := range t.switches {
		name := t.g.VertexName(v)
		fmt.Fprintf(bw, "Unicast lids [0x0-0x%x] of switch Lid %d guid 0x%016x (%s):\n", maxLID, f.LID(v), f.GUID(v), name)
		bw.WriteString("  Lid  Out   Destination\n       Port     Info \n")
		n := 0
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
			fmt.Fprintf(bw, "0x%04x %03d : (%s portguid 0x%016x: '%s')\n", e.lid, port, caType(dv), f.PortGUID(dv), t.g.VertexName(dv))
			n++
		}
		fmt.Fprintf(bw, "%d valid lids dumped \n", n)
	}
	return bw.Flush()
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
