package topology

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// LooksLikeIBNetDiscover reports whether data looks like an ibnetdiscover topology file: a line
// starting a Switch or Ca block, or the switchguid=/caguid= lines that precede them.
func LooksLikeIBNetDiscover(data []byte) bool {
	for _, line := range bytes.Split(data, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if ibBlock.Match(line) || bytes.HasPrefix(line, []byte("switchguid=")) || bytes.HasPrefix(line, []byte("caguid=")) {
			return true
		}
	}
	return false
}

var (
	// Switch	36 "S-0002c903004a6e70"		# "desc" enhanced port 0 lid 3 lmc 0
	ibBlock = regexp.MustCompile(`^(Switch|Ca|Rt)\s+(\d+)\s+"([^"]+)"\s*(#.*)?$`)
	// [1](2c90300a1b2c1) 	"S-0002c903004a6e70"[1](...)		# comment
	ibPort  = regexp.MustCompile(`^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?(?:\[ext \d+\])?\s+"([^"]+)"\[(\d+)\](?:\(([0-9a-fA-F]+)\))?(?:\[ext \d+\])?\s*(#.*)?$`)
	ibDesc  = regexp.MustCompile(`"([^"]*)"`)
	ibLID   = regexp.MustCompile(`\blid (\d+)`)
	ibSpeed = regexp.MustCompile(`\b(\d+)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b`)
)

// laneGbps is the data rate of one lane per InfiniBand speed.
var laneGbps = map[string]float64{"SDR": 2, "DDR": 4, "QDR": 8, "FDR10": 10, "FDR": 13.64, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200}

// ParseIBNetDiscover reads an ibnetdiscover topology file (the Switch and Ca blocks with their port
// links, GUIDs, descriptions and LIDs, as infiniband-diags and ibsim write them). CAs become nodes
// (in file order), switches follow in GUID order with levels counted from the switches that have
// CAs. Errors carry the file and line.
func ParseIBNetDiscover(r io.Reader, file string) (*Fabric, error) {
	type node struct {
		kind     Kind
		id, desc string
		guid     uint64
		portGUID uint64
		lid      int
		line     int
	}
	type end struct {
		id   string
		port int
	}
	type link struct {
		a, b end
		mbps float64
		line int
	}
	var nodes []*node
	byID := map[string]*node{}
	peer := map[end]end{}
	var links []link
	var cur *node
	var pendGUID uint64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	bad := func(format string, args ...any) error {
		return &Error{File: file, Line: line, Msg: fmt.Sprintf(format, args...)}
	}
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		switch {
		case text == "" || strings.HasPrefix(text, "#"):
			if text == "" {
				cur = nil
			}
			continue
		case strings.HasPrefix(text, "vendid=") || strings.HasPrefix(text, "devid=") || strings.HasPrefix(text, "sysimgguid="):
			continue
		case strings.HasPrefix(text, "switchguid=") || strings.HasPrefix(text, "caguid=") || strings.HasPrefix(text, "rtguid="):
			v := text[strings.IndexByte(text, '=')+1:]
			if i := strings.IndexByte(v, '('); i >= 0 {
				v = v[:i]
			}
			g, ok := parseGUID(v)
			if !ok {
				return nil, bad("malformed GUID %q", v)
			}
			pendGUID = g
			continue
		}
		if m := ibBlock.FindStringSubmatch(text); m != nil {
			kind := Node
			if m[1] == "Switch" {
				kind = Switch
			}
			if m[1] == "Rt" {
				return nil, bad("router nodes are not supported")
			}
			if _, dup := byID[m[3]]; dup {
				return nil, bad("%s %q defined twice", m[1], m[3])
			}
			n := &node{kind: kind, id: m[3], guid: pendGUID, line: line}
			pendGUID = 0
			if n.guid == 0 {
				hex := m[3]
				if i := strings.IndexByte(hex, '-'); i >= 0 {
					hex = hex[i+1:]
				}
				g, ok := parseGUID(hex)
				if !ok {
					return nil, bad("no GUID for %q (no switchguid=/caguid= line and no hex in its name)", m[3])
				}
				n.guid = g
			}
			if c := m[4]; c != "" {
				if d := ibDesc.FindStringSubmatch(c); d != nil {
					n.desc = d[1]
				}
				if l := ibLID.FindStringSubmatch(c); l != nil {
					n.lid, _ = strconv.Atoi(l[1])
				}
			}
			nodes = append(nodes, n)
			byID[n.id] = n
			cur = n
			continue
		}
		if strings.HasPrefix(text, "[") {
			if cur == nil {
				return nil, bad("port line outside a Switch or Ca block")
			}
			m := ibPort.FindStringSubmatch(text)
			if m == nil {
				return nil, bad("malformed port line %q", text)
			}
			lp, _ := strconv.Atoi(m[1])
			rp, _ := strconv.Atoi(m[4])
			if lp < 1 || lp > 255 || rp < 1 || rp > 255 {
				return nil, bad("port number out of range 1..255")
			}
			if m[2] != "" && cur.portGUID == 0 {
				cur.portGUID, _ = parseGUID(m[2])
			}
			mbps := 100000.0
			if s := ibSpeed.FindStringSubmatch(m[6]); s != nil {
				w, _ := strconv.Atoi(s[1])
				mbps = float64(w) * laneGbps[s[2]] * 1000
			}
			if cur.kind != Switch && cur.lid == 0 {
				if l := ibLID.FindStringSubmatch(m[6]); l != nil {
					cur.lid, _ = strconv.Atoi(l[1])
				}
			}
			a, b := end{cur.id, lp}, end{m[3], rp}
			if a == b {
				return nil, bad("port linked to itself")
			}
			if p, ok := peer[a]; ok {
				if p != b {
					return nil, bad("%s port %d linked to %s[%d] here but to %s[%d] before", a.id, a.port, b.id, b.port, p.id, p.port)
				}
				continue // the other end's line, already recorded
			}
			if p, ok := peer[b]; ok && p != a {
				return nil, bad("%s port %d linked to %s[%d] here but to %s[%d] before", b.id, b.port, a.id, a.port, p.id, p.port)
			}
			peer[a], peer[b] = b, a
			links = append(links, link{a: a, b: b, mbps: mbps, line: line})
			continue
		}
		return nil, bad("unrecognised line %q", text)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for _, l := range links {
		if byID[l.b.id] == nil {
			line = l.line
			return nil, bad("link to %q, which has no Switch or Ca block", l.b.id)
		}
	}
	if len(nodes) == 0 {
		return nil, &Error{File: file, Msg: "no Switch or Ca blocks"}
	}
	// Vertex order: CAs in file order, then switches by GUID.
	var order []*node
	for _, n := range nodes {
		if n.kind != Switch {
			order = append(order, n)
		}
	}
	nca := len(order)
	for _, n := range nodes {
		if n.kind == Switch {
			order = append(order, n)
		}
	}
	sws := order[nca:]
	sort.SliceStable(sws, func(i, j int) bool { return sws[i].guid < sws[j].guid })
	vid := make(map[string]VertexID, len(order))
	for i, n := range order {
		vid[n.id] = VertexID(i)
	}
	// Levels: hops from the nearest switch with a CA.
	adj := make([][]VertexID, len(order))
	for _, l := range links {
		a, b := vid[l.a.id], vid[l.b.id]
		adj[a] = append(adj[a], b)
		adj[b] = append(adj[b], a)
	}
	level := make([]int, len(order))
	for i := range level {
		level[i] = -1
	}
	var q []VertexID
	for v := nca; v < len(order); v++ {
		for _, w := range adj[v] {
			if int(w) < nca {
				level[v] = 0
				q = append(q, VertexID(v))
				break
			}
		}
	}
	for i := 0; i < len(q); i++ {
		v := q[i]
		for _, w := range adj[v] {
			if int(w) >= nca && level[w] < 0 {
				level[w] = level[v] + 1
				q = append(q, w)
			}
		}
	}
	b := &Builder{Name: file}
	b.Grow(len(order), len(links))
	names := map[string]bool{}
	for i, n := range order {
		name := n.desc
		if name == "" || names[name] {
			name = n.id
		}
		names[name] = true
		if n.kind == Switch {
			b.AddVertex(Switch, max(level[i], 0), name)
		} else {
			b.AddVertex(Node, 0, name)
		}
	}
	// Children first on each link (CA, or the lower switch); links in order of their child's port.
	for i := range links {
		l := &links[i]
		a, bb := vid[l.a.id], vid[l.b.id]
		ka, kb := order[a].kind == Switch, order[bb].kind == Switch
		if (ka && !kb) || (ka && kb && level[bb] < level[a]) {
			l.a, l.b = l.b, l.a
		}
	}
	sort.SliceStable(links, func(i, j int) bool {
		ai, aj := vid[links[i].a.id], vid[links[j].a.id]
		if ai != aj {
			return ai < aj
		}
		return links[i].a.port < links[j].a.port
	})
	f := &Fabric{guid: make([]uint64, len(order)), portGUID: make([]uint64, len(order)), lid: make([]uint16, len(order))}
	f.physA = make([]uint16, len(links))
	f.physB = make([]uint16, len(links))
	seg := map[Kind]string{Node: "ca", Switch: "switch"}
	for i, l := range links {
		a, bb := vid[l.a.id], vid[l.b.id]
		b.AddLink(a, bb, l.mbps, 0.1, seg[order[a].kind])
		f.physA[i], f.physB[i] = uint16(l.a.port), uint16(l.b.port)
	}
	nextLID := 0
	for _, n := range order {
		nextLID = max(nextLID, n.lid)
	}
	for i, n := range order {
		f.guid[i], f.portGUID[i] = n.guid, n.portGUID
		lid := n.lid
		if lid <= 0 || lid > 0xffff {
			nextLID++
			lid = nextLID
		}
		f.lid[i] = uint16(lid)
	}
	g, err := b.Build()
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	f.Graph = g
	return f, nil
}
