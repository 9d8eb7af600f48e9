package topology

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Faults lists the links and switches to remove from a fabric.
type Faults struct {
	Links    []LinkID
	Switches []VertexID
}

// ParseFaults reads a faults file for fabric f. One element per line, '#' starts a comment:
//
//	switch NAME|0xGUID          remove the switch and all its links
//	link NAME|0xGUID NAME|0xGUID remove every link between the two vertices
//
// Errors name the file and line, and the unknown element.
func ParseFaults(r io.Reader, file string, f *Fabric) (Faults, error) {
	var out Faults
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if i := strings.IndexByte(text, '#'); i >= 0 {
			text = text[:i]
		}
		fields := strings.Fields(text)
		if len(fields) == 0 {
			continue
		}
		if err := out.add(f, fields); err != nil {
			return Faults{}, &Error{File: file, Line: line, Msg: err.Error()}
		}
	}
	if err := sc.Err(); err != nil {
		return Faults{}, fmt.Errorf("%s: %w", file, err)
	}
	return out, nil
}

// add records the fault of one line's fields; its error is the message for that line.
func (out *Faults) add(f *Fabric, fields []string) error {
	switch fields[0] {
	case "switch":
		if len(fields) != 2 {
			return errors.New("want: switch NAME|0xGUID")
		}
		v, ok := f.Lookup(fields[1])
		if !ok {
			return fmt.Errorf("unknown switch %q", fields[1])
		}
		if f.Kind(v) != Switch {
			return fmt.Errorf("%q is a %s, not a switch", fields[1], f.Kind(v))
		}
		out.Switches = append(out.Switches, v)
	case "link":
		if len(fields) != 3 {
			return errors.New("want: link NAME|0xGUID NAME|0xGUID")
		}
		links, err := linksBetween(f, fields[1], fields[2])
		out.Links = append(out.Links, links...)
		return err
	default:
		return fmt.Errorf("unknown fault kind %q (want switch or link)", fields[0])
	}
	return nil
}

// linksBetween returns every link between the elements named a and b, and an error when there is none.
func linksBetween(f *Fabric, a, b string) ([]LinkID, error) {
	va, ok := f.Lookup(a)
	if !ok {
		return nil, fmt.Errorf("unknown element %q", a)
	}
	vb, ok := f.Lookup(b)
	if !ok {
		return nil, fmt.Errorf("unknown element %q", b)
	}
	var out []LinkID
	for _, l := range f.Links(va) {
		if f.Other(l, va) == vb {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no link between %q and %q", a, b)
	}
	return out, nil
}

// Degrade returns a copy of g without the given links and without every link of the given
// switches. Vertices keep their IDs (a removed switch stays as a vertex without links, and so do
// endpoints cut off by the removal); ports are renumbered densely, and orig maps each new link to
// its link in g.
func Degrade(g *Graph, links []LinkID, switches []VertexID) (ng *Graph, orig []LinkID, err error) {
	drop := make([]bool, len(g.links))
	for _, l := range links {
		if l < 0 || int(l) >= len(g.links) {
			return nil, nil, fmt.Errorf("degrade: link %d out of range", l)
		}
		drop[l] = true
	}
	for _, v := range switches {
		if v < 0 || int(v) >= len(g.kinds) {
			return nil, nil, fmt.Errorf("degrade: vertex %d out of range", v)
		}
		for _, l := range g.Links(v) {
			drop[l] = true
		}
	}
	b := &Builder{Name: g.Name, kinds: g.kinds, levels: g.levels, names: g.names, segments: g.segments,
		hier: g.hier, namer: g.namer, degree: make([]int32, len(g.kinds))}
	b.links = make([]Link, 0, len(g.links))
	orig = make([]LinkID, 0, len(g.links))
	for i, l := range g.links {
		if drop[i] {
			continue
		}
		b.degree[l.A]++
		b.degree[l.B]++
		l.PortA, l.PortB = uint16(b.degree[l.A]), uint16(b.degree[l.B])
		b.links = append(b.links, l)
		orig = append(orig, LinkID(i))
	}
	ng, err = b.Build()
	return ng, orig, err
}

// ApplyFaults returns the fabric without the faulty elements. Physical port numbers, GUIDs and LIDs
// are kept, so that dumps still name the real ports.
func (f *Fabric) ApplyFaults(ft Faults) (*Fabric, error) {
	ng, orig, err := Degrade(f.Graph, ft.Links, ft.Switches)
	if err != nil {
		return nil, err
	}
	nf := &Fabric{Graph: ng, guid: f.guid, portGUID: f.portGUID, lid: f.lid, byName: f.byName,
		desc: f.desc, guidKnown: f.guidKnown, lidKnown: f.lidKnown, lmc: f.lmc}
	nf.physA = make([]uint16, len(orig))
	nf.physB = make([]uint16, len(orig))
	for i, o := range orig {
		nf.physA[i] = uint16(f.LinkPort(f.links[o].A, o))
		nf.physB[i] = uint16(f.LinkPort(f.links[o].B, o))
	}
	return nf, nil
}

// parseGUID parses "0x0002c903000a1b2c" or a bare hex string.
func parseGUID(s string) (uint64, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	if s == "" || len(s) > 16 {
		return 0, false
	}
	v, err := strconv.ParseUint(s, 16, 64)
	return v, err == nil
}
