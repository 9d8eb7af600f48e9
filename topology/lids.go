package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// PortIdentity is one port as a fabric tool reports it: the node's description and GUID, the
// port's GUID and base LID.
type PortIdentity struct {
	Desc     string
	NodeGUID uint64
	PortGUID uint64
	LID      int
}

// LIDMap is the port identities of a running fabric, read by ParseLIDs from OpenSM's guid2lid
// file, an ibnetdiscover output or a saquery NodeRecord dump. It gives a topology that lacks them
// the GUIDs and LIDs that OpenSM assigned (see Fabric.WithLIDs).
type LIDMap struct {
	File   string
	Format string // "guid2lid", "ibnetdiscover" or "saquery"
	byPort map[uint64]PortIdentity
	byDesc map[string][]PortIdentity // nil for guid2lid, which has no descriptions
}

// Len returns the number of ports in the map.
func (m *LIDMap) Len() int { return len(m.byPort) }

var (
	// 0x0000000000100004 0x0004 0x0004   (OpenSM's guid2lid: port GUID, first and last LID)
	guid2lidLine = regexp.MustCompile(`^(0x[0-9a-fA-F]{1,16})\s+(0x[0-9a-fA-F]+|\d+)\s+(0x[0-9a-fA-F]+|\d+)$`)
	// 		port_guid...............0x0000000000100001
	saqField = regexp.MustCompile(`^\s*(\w+)\.{2,}(.*)$`)
)

// ParseLIDs reads port identities in one of three layouts, told apart by their content: OpenSM's
// guid2lid cache (/var/cache/opensm/guid2lid), the output of ibnetdiscover, or the NodeRecords
// printed by saquery. Errors name the file and line.
func ParseLIDs(r io.Reader, file string) (*LIDMap, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	switch {
	case bytes.Contains(data, []byte("NodeRecord dump:")):
		return parseSAQuery(data, file)
	case LooksLikeIBNetDiscover(data):
		f, err := ParseIBNetDiscover(bytes.NewReader(data), file)
		if err != nil {
			return nil, err
		}
		return lidsOfFabric(f, file)
	}
	return parseGUID2LID(data, file)
}

func newLIDMap(file, format string) *LIDMap {
	m := &LIDMap{File: file, Format: format, byPort: map[uint64]PortIdentity{}}
	if format != "guid2lid" {
		m.byDesc = map[string][]PortIdentity{}
	}
	return m
}

func (m *LIDMap) add(p PortIdentity) {
	m.byPort[p.PortGUID] = p
	if m.byDesc != nil {
		m.byDesc[p.Desc] = append(m.byDesc[p.Desc], p)
	}
}

func parseGUID2LID(data []byte, file string) (*LIDMap, error) {
	m := newLIDMap(file, "guid2lid")
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f := guid2lidLine.FindStringSubmatch(text)
		if f == nil {
			return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("unrecognised line %q: want OpenSM's guid2lid (\"0xPORTGUID 0xLID 0xLID\"), an ibnetdiscover output or saquery's NodeRecords", text)}
		}
		g, _ := parseGUID(f[1])
		lid, err := strconv.ParseInt(f[2], 0, 32)
		if err != nil || lid < 1 || lid >= 0xc000 {
			return nil, &Error{File: file, Line: line, Msg: fmt.Sprintf("LID %s out of the unicast range 1..0xbfff", f[2])}
		}
		m.add(PortIdentity{PortGUID: g, LID: int(lid)})
	}
	if len(m.byPort) == 0 {
		return nil, &Error{File: file, Msg: "no ports: want OpenSM's guid2lid, an ibnetdiscover output or saquery's NodeRecords"}
	}
	return m, nil
}

// parseSAQuery reads saquery's NodeRecord dump: blocks of "field....value" lines.
func parseSAQuery(data []byte, file string) (*LIDMap, error) {
	m := newLIDMap(file, "saquery")
	var cur PortIdentity
	start, have := 0, false
	flush := func() error {
		if !have {
			return nil
		}
		if cur.PortGUID == 0 || cur.LID <= 0 {
			return &Error{File: file, Line: start, Msg: "NodeRecord without port_guid or lid"}
		}
		m.add(cur)
		return nil
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if strings.TrimSpace(text) == "NodeRecord dump:" {
			if err := flush(); err != nil {
				return nil, err
			}
			cur, start, have = PortIdentity{}, line, true
			continue
		}
		f := saqField.FindStringSubmatch(text)
		if f == nil || !have {
			continue
		}
		if err := cur.setSAField(f[1], strings.TrimSpace(f[2])); err != nil {
			return nil, &Error{File: file, Line: line, Msg: err.Error()}
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return m, nil
}

func (p *PortIdentity) setSAField(key, val string) error {
	var err error
	switch key {
	case "lid":
		var n int64
		n, err = strconv.ParseInt(val, 0, 32)
		p.LID = int(n)
	case "node_guid":
		var ok bool
		if p.NodeGUID, ok = parseGUID(val); !ok {
			err = fmt.Errorf("malformed GUID")
		}
	case "port_guid":
		var ok bool
		if p.PortGUID, ok = parseGUID(val); !ok {
			err = fmt.Errorf("malformed GUID")
		}
	case "NodeDescription":
		p.Desc = val
	}
	if err != nil {
		return fmt.Errorf("%s %q: %v", key, val, err)
	}
	return nil
}

// lidsOfFabric takes the identities of an ibnetdiscover output; it must give every LID.
func lidsOfFabric(f *Fabric, file string) (*LIDMap, error) {
	m := newLIDMap(file, "ibnetdiscover")
	for v := range VertexID(f.NumVertices()) {
		if !f.HasLID(v) {
			return nil, &Error{File: file, Msg: fmt.Sprintf("%q has no LID: give the ibnetdiscover output of the running fabric (its lines carry \"lid N\")", f.Desc(v))}
		}
		m.add(PortIdentity{Desc: f.Desc(v), NodeGUID: f.GUID(v), PortGUID: f.PortGUID(v), LID: f.LID(v)})
	}
	return m, nil
}

// WithLIDs returns the fabric with the identities of m: each vertex is found by its port GUID
// when the fabric has GUIDs of its own, else (or when that GUID is not in m) by its node
// description, which must then be unique in m. Every vertex with a link must be found; the error
// names the first ones that were not.
func (f *Fabric) WithLIDs(m *LIDMap) (*Fabric, error) {
	n := f.NumVertices()
	nf := &Fabric{Graph: f.Graph, physA: f.physA, physB: f.physB, desc: f.desc, lmc: f.lmc, guidKnown: true,
		guid: make([]uint64, n), portGUID: make([]uint64, n), lid: make([]uint16, n), lidKnown: make([]bool, n)}
	var missing, ambiguous []string
	for v := range VertexID(n) {
		nf.guid[v], nf.portGUID[v], nf.lid[v] = f.GUID(v), f.PortGUID(v), uint16(f.LID(v))
		p, ok := PortIdentity{}, false
		if f.guidKnown {
			p, ok = m.byPort[f.PortGUID(v)]
		}
		if !ok && m.byDesc != nil {
			switch c := m.byDesc[f.Desc(v)]; len(c) {
			case 1:
				p, ok = c[0], true
				nf.guid[v], nf.portGUID[v] = c[0].NodeGUID, c[0].PortGUID
			case 0:
			default:
				ambiguous = append(ambiguous, f.Desc(v))
				continue
			}
		}
		if !ok {
			if len(f.Links(v)) > 0 {
				missing = append(missing, fmt.Sprintf("%s (port GUID 0x%016x)", f.Desc(v), f.PortGUID(v)))
			}
			continue
		}
		nf.lid[v], nf.lidKnown[v] = uint16(p.LID), true
	}
	if len(ambiguous) > 0 {
		return nil, fmt.Errorf("%s: %d node descriptions name several ports (first: %q): give OpenSM's guid2lid file, matched by port GUID", m.File, len(ambiguous), ambiguous[0])
	}
	if len(missing) > 0 {
		how := "port GUID"
		if m.byDesc != nil {
			how = "port GUID or node description"
		}
		if !f.guidKnown && m.byDesc == nil {
			return nil, fmt.Errorf("%s is a guid2lid file, which names ports by GUID, and the topology has no GUIDs of its own: give the fabric's ibnetdiscover or saquery output, matched by node description, or route the ibnetdiscover output itself", m.File)
		}
		return nil, fmt.Errorf("%s: %d of the topology's ports are not in it by %s, first: %s", m.File, len(missing), how, strings.Join(missing[:min(3, len(missing))], ", "))
	}
	return nf, nil
}

// MissingIdentity says why the fabric's identities cannot be handed to OpenSM as they are, or
// returns "" when every vertex with a link has its fabric GUID and LID. OpenSM applies a table
// entry to the port whose GUID it names (and, for a GUID it does not know, to the LID as written),
// so made-up GUIDs or LIDs give tables that load without complaint and route to the wrong ports.
func (f *Fabric) MissingIdentity() string {
	if !f.guidKnown {
		return "no port GUIDs or LIDs of its own (a spec or machine file gets made-up ones)"
	}
	if f.lmc > 0 {
		return fmt.Sprintf("LMC %d (several LIDs per port; the dump gives base LIDs only)", f.lmc)
	}
	var missing []string
	for v := range VertexID(f.NumVertices()) {
		if !f.HasLID(v) && len(f.Links(v)) > 0 {
			missing = append(missing, f.Desc(v))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return fmt.Sprintf("no LID for %d of its ports (first: %s)", len(missing), strings.Join(missing[:min(3, len(missing))], ", "))
}
