package routing

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"sort"

	"github.com/bootfabric/bootfabric/topology"
)

// MaxSL is the number of InfiniBand service levels (SL 0..15).
const MaxSL = 16

// Lanes is the deployable form of tables whose hops use several virtual channels: InfiniBand
// picks a packet's virtual lane at each switch from the packet's service level (SL, set by the
// source for the whole path from the SA's PathRecord) and the switch's SL-to-VL table for the
// (input port, output port) pair. So each path gets an SL, and each switch an SL-to-VL table per
// port pair, such that at every hop the lane is the engine's virtual channel: what OpenSM's DFSSSP
// engine does with one lane per path, here with the lane changing along the path where the engine
// changes channel (VTFTR's row hops after a column hop).
type Lanes struct {
	NumSL int // service levels used (SL 0..NumSL-1)
	NumVL int // virtual lanes used (VL 0..NumVL-1)

	f      *topology.Fabric
	t      *Tables
	sl     []uint8        // source destination index * len(dests) + destination index
	sl2vl  [][]*[16]uint8 // switch index -> in*stride+out (physical ports) -> VL per SL
	stride []int          // switch index -> highest physical port + 1
}

// AssignLanes gives each routed path of t an SL and each switch its SL-to-VL tables so that every
// hop runs on the engine's virtual channel. Paths are taken in order and given the lowest SL whose
// existing SL-to-VL entries agree with their channels (greedy colouring); an error says when 16
// SLs do not suffice.
func AssignLanes(f *topology.Fabric, t *Tables) (*Lanes, error) {
	if f.Graph != t.g {
		return nil, fmt.Errorf("lanes: tables were computed for another graph")
	}
	D := len(t.dests)
	ln := &Lanes{f: f, t: t, sl: make([]uint8, D*D), sl2vl: make([][]*[16]uint8, len(t.switches)), stride: make([]int, len(t.switches)), NumVL: t.nvc}
	for s, v := range t.switches {
		n := 0
		for _, l := range t.g.Links(v) {
			n = max(n, f.LinkPort(v, l))
		}
		ln.stride[s] = n + 1
		ln.sl2vl[s] = make([]*[16]uint8, (n+1)*(n+1))
	}
	var hops []hop
	for src := range D {
		if !t.Healthy(src) {
			continue
		}
		for d := range D {
			if d == src || !t.Healthy(d) {
				continue
			}
			var err error
			if hops, err = pathHops(f, t, hops[:0], src, d); err != nil {
				return nil, err
			}
			sl, ok := ln.fit(hops)
			if !ok {
				return nil, fmt.Errorf("lanes: path %s->%s fits no SL: %d service levels do not express the engine's channels", t.g.VertexName(t.dests[src]), t.g.VertexName(t.dests[d]), MaxSL)
			}
			ln.sl[src*D+d] = uint8(sl)
			ln.NumSL = max(ln.NumSL, sl+1)
		}
	}
	return ln, nil
}

// hop is one switch on a path: its index, physical in and out ports, and the channel.
type hop struct {
	s       int
	in, out int
	vc      uint8
}

// pathHops lists the switch hops from destination index src to d by following the tables.
func pathHops(f *topology.Fabric, t *Tables, buf []hop, src, d int) ([]hop, error) {
	g := t.g
	l := t.attLink[src]
	cur := g.Other(l, t.dests[src])
	in := f.LinkPort(cur, l)
	for range len(t.switches) + 1 {
		s := int(t.swIdx[cur])
		p := t.Port(s, d)
		if p == NoPort {
			return nil, fmt.Errorf("lanes: no entry at %s for %s", g.VertexName(cur), g.VertexName(t.dests[d]))
		}
		l = g.Links(cur)[p-1]
		buf = append(buf, hop{s, in, f.LinkPort(cur, l), uint8(t.VC(s, d))})
		next := g.Other(l, cur)
		if next == t.dests[d] {
			return buf, nil
		}
		if g.Kind(next) != topology.Switch {
			return nil, fmt.Errorf("lanes: path to %s reaches endpoint %s", g.VertexName(t.dests[d]), g.VertexName(next))
		}
		in, cur = f.LinkPort(next, l), next
	}
	return nil, fmt.Errorf("lanes: forwarding loop towards %s", g.VertexName(t.dests[d]))
}

// fit finds the lowest SL whose entries agree with the hops' channels and sets them.
func (ln *Lanes) fit(hops []hop) (int, bool) {
	for sl := range MaxSL {
		ok := true
		for _, h := range hops {
			if e := ln.sl2vl[h.s][h.in*ln.stride[h.s]+h.out]; e != nil && e[sl] != 0xff && e[sl] != h.vc {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		for _, h := range hops {
			k := h.in*ln.stride[h.s] + h.out
			e := ln.sl2vl[h.s][k]
			if e == nil {
				e = &[16]uint8{}
				for i := range e {
					e[i] = 0xff
				}
				ln.sl2vl[h.s][k] = e
			}
			e[sl] = h.vc
		}
		return sl, true
	}
	return 0, false
}

// WriteSL writes the path service levels: a line "SRC_PORT_GUID DST_LID SL" for each path whose
// SL is not 0, sources and destinations in table order. A subnet manager's SA answers PathRecord
// queries for the pair with that SL (pairs not listed: SL 0).
func (ln *Lanes) WriteSL(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	f, t := ln.f, ln.t
	fmt.Fprintf(bw, "# Path service levels of %s, written by bootctl route --dump: the SA must answer a\n", t.engine)
	fmt.Fprintf(bw, "# PathRecord from the source port to the destination LID with this SL. Pairs not listed: SL 0.\n")
	fmt.Fprintf(bw, "# SLs %d, VLs %d\n# src_port_guid dst_lid sl\n", ln.NumSL, ln.NumVL)
	D := len(t.dests)
	for src := range D {
		for d := range D {
			if sl := ln.sl[src*D+d]; sl != 0 {
				fmt.Fprintf(bw, "0x%016x 0x%04x %d\n", f.PortGUID(t.dests[src]), f.LID(t.dests[d]), sl)
			}
		}
	}
	return bw.Flush()
}

// WriteSL2VL writes each switch's SL-to-VL tables in the layout of infiniband-diags'
// `smpquery sl2vl` (one line per input/output port pair that a path uses; pairs not listed map
// every SL to VL 0, as do SLs no path uses):
//
//	# SL2VL table: Switch 0x0000000000200000 ('leaf0-0') Lid 1
//	#                 SL: | 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|
//	ports: in  1, out  5: | 0| 1| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0| 0|
func (ln *Lanes) WriteSL2VL(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	f, t := ln.f, ln.t
	fmt.Fprintf(bw, "# SL-to-VL tables of %s per switch and (input, output) port pair, written by bootctl route --dump\n", t.engine)
	for _, s := range switchOrder(f, t) {
		v := t.switches[s]
		head := false
		for k, e := range ln.sl2vl[s] {
			if e == nil {
				continue
			}
			if !head {
				fmt.Fprintf(bw, "# SL2VL table: Switch 0x%016x ('%s') Lid %d\n", f.GUID(v), f.Desc(v), f.LID(v))
				bw.WriteString("#                 SL: | 0| 1| 2| 3| 4| 5| 6| 7| 8| 9|10|11|12|13|14|15|\n")
				head = true
			}
			fmt.Fprintf(bw, "ports: in %2d, out %2d: |", k/ln.stride[s], k%ln.stride[s])
			for _, vl := range e {
				if vl == 0xff {
					vl = 0
				}
				fmt.Fprintf(bw, "%2d|", vl)
			}
			bw.WriteString("\n")
		}
	}
	return bw.Flush()
}

// switchOrder is the order OpenSM lists its switches in: its GUID map is keyed by the GUID in
// network byte order and compared as a host integer, which on the x86 and arm64 hosts OpenSM runs
// on is the order of the byte-reversed GUID. The loader does not care; a diff does.
func switchOrder(f *topology.Fabric, t *Tables) []int {
	order := make([]int, len(t.switches))
	for s := range order {
		order[s] = s
	}
	sort.Slice(order, func(i, j int) bool {
		return bits.ReverseBytes64(f.GUID(t.switches[order[i]])) < bits.ReverseBytes64(f.GUID(t.switches[order[j]]))
	})
	return order
}
