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

// LooksLikeIBNetDiscover reports whether data looks like an ibnetdiscover topology file or an
// ibsim net file: a line starting a Switch, Ca or Hca block, or the switchguid=/caguid= lines that
// precede them.
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
	// Hca	2 "Hca1"   (ibsim)
	ibBlock = regexp.MustCompile(`^(Switch|Hca|Ca|Rt)\s*(\d+)\s*"([^"]+)"\s*(#.*)?$`)
	// [1](2c90300a1b2c1) 	"S-0002c903004a6e70"[1](...)		# comment
	// [1]	"Switch1"[3]	w=4 s=2   (ibsim: remote port defaults to 1, link options)
	ibPort  = regexp.MustCompile(`^\[(\d+)\](?:\(([0-9a-fA-F]+)\))?(?:\[ext \d+\])?\s*"([^"]+)"(?:\[(\d+)\])?(?:\(([0-9a-fA-F]+)\))?(?:\[ext \d+\])?\s*((?:[ws]=\w+\s*|lid \d+\s*|lmc \d+\s*)*)(#.*)?$`)
	ibDesc  = regexp.MustCompile(`^#\s*"([^"]*)"`)
	ibLID   = regexp.MustCompile(`\blid (\d+)`)
	ibLMC   = regexp.MustCompile(`\blmc (\d+)`)
	ibSpeed = regexp.MustCompile(`\b(\d+)x(SDR|DDR|QDR|FDR10|FDR|EDR|HDR|NDR|XDR)\b`)
	// ibsim's own settings; the include, module, do and alias lines change names or run commands,
	// which a static reading cannot follow, so they are refused.
	ibSetting = regexp.MustCompile(`^(vendid|devid|sysimgguid|width|speed|pdebug)\b`)
)

// laneGbps is the data rate of one lane per InfiniBand speed.
var laneGbps = map[string]float64{"SDR": 2, "DDR": 4, "QDR": 8, "FDR10": 10, "FDR": 13.64, "EDR": 25, "HDR": 50, "NDR": 100, "XDR": 200}

// ibsim's first GUIDs when a net file sets none (ibsim/sim_net.c).
const (
	ibsimFirstCAGUID     = 0x100000
	ibsimFirstSwitchGUID = 0x200000
)

type ibNode struct {
	kind      Kind
	id, desc  string
	ports     int
	guid      uint64
	portGUID  uint64
	lid       int
	lidKnown  bool
	lmc       int
	line      int
	firstPort int // the port of the CA's first link (its port GUID's port)
}

type ibEnd struct {
	id   string
	port int
}

type ibLink struct {
	a, b ibEnd
	mbps float64
	line int
}

// ibParser holds the state of one ParseIBNetDiscover run.
type ibParser struct {
	file  string
	line  int
	nodes []*ibNode
	byID  map[string]*ibNode
	peer  map[ibEnd]ibEnd
	links []ibLink
	cur   *ibNode
	// GUID counters as ibsim keeps them: switchguid=/caguid= set them, each node takes the next.
	swGUID, caGUID     uint64
	swBase, caBase     uint64
	defWidth, defSpeed int
}

func (p *ibParser) bad(format string, args ...any) error {
	return &Error{File: p.file, Line: p.line, Msg: fmt.Sprintf(format, args...)}
}

// ParseIBNetDiscover reads an ibnetdiscover topology file or an ibsim net file (the Switch and
// Ca/Hca blocks with their port links, GUIDs, descriptions and LIDs). GUIDs are read the way ibsim
// assigns them: a switchguid=/caguid= line sets the next node's GUID, and nodes without one take the
// next GUID after the previous node of their kind (switches from 0x200000, CAs from 0x100000, a CA
// reserving one GUID per port, its port p having GUID node+p). LIDs are known only where the file
// gives them ("lid N"). CAs become nodes (in file order), switches follow in GUID order with levels
// counted from the switches that have CAs. Errors carry the file and line.
func ParseIBNetDiscover(r io.Reader, file string) (*Fabric, error) {
	p := &ibParser{file: file, byID: map[string]*ibNode{}, peer: map[ibEnd]ibEnd{},
		swGUID: ibsimFirstSwitchGUID, caGUID: ibsimFirstCAGUID, swBase: ibsimFirstSwitchGUID, caBase: ibsimFirstCAGUID}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		p.line++
		if err := p.parseLine(strings.TrimSpace(sc.Text())); err != nil {
			return nil, err
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return p.build()
}

func (p *ibParser) parseLine(text string) error {
	switch {
	case text == "":
		p.cur = nil
		return nil
	case strings.HasPrefix(text, "#"):
		return nil
	case strings.HasPrefix(text, "switchguid") || strings.HasPrefix(text, "caguid") || strings.HasPrefix(text, "hcaguids"):
		return p.parseGUIDBase(text)
	case strings.HasPrefix(text, "rtguid"):
		return p.bad("router nodes are not supported")
	case ibSetting.MatchString(text):
		return p.parseSetting(text)
	case strings.HasPrefix(text, "include") || strings.HasPrefix(text, "module") || strings.HasPrefix(text, "do ") || strings.HasPrefix(text, "@"):
		return p.bad("ibsim's include, module, do and @alias lines are not supported: write the net file out in full (ibnetdiscover of the running ibsim gives it)")
	case strings.HasPrefix(text, "["):
		return p.parsePort(text)
	}
	if m := ibBlock.FindStringSubmatch(text); m != nil {
		return p.parseBlock(m)
	}
	return p.bad("unrecognised line %q", text)
}

// parseGUIDBase reads "switchguid=0x...(...)", "caguid=0x..." or ibsim's relative "switchguid+N".
func (p *ibParser) parseGUIDBase(text string) error {
	i := strings.IndexAny(text, "=+")
	if i < 0 {
		return p.bad("malformed GUID line %q: want switchguid=0x... or caguid=0x...", text)
	}
	v := strings.TrimSpace(text[i+1:])
	if j := strings.IndexByte(v, '('); j >= 0 {
		v = v[:j]
	}
	g, ok := parseGUID(v)
	if !ok {
		return p.bad("malformed GUID %q", v)
	}
	sw := strings.HasPrefix(text, "switchguid")
	switch {
	case text[i] == '+' && sw:
		p.swGUID = p.swBase + g
	case text[i] == '+':
		p.caGUID = p.caBase + g
	case sw:
		p.swBase, p.swGUID = g, g
	default:
		p.caBase, p.caGUID = g, g
	}
	return nil
}

// parseSetting reads ibsim's width=/speed= defaults (enabled-width and speed masks); the others
// (vendid, devid, sysimgguid, pdebug) do not change the fabric's shape.
func (p *ibParser) parseSetting(text string) error {
	if !strings.HasPrefix(text, "width") && !strings.HasPrefix(text, "speed") {
		return nil
	}
	i := strings.IndexByte(text, '=')
	if i < 0 {
		return p.bad("malformed setting %q: want width=N or speed=N", text)
	}
	n, err := strconv.ParseInt(strings.TrimSpace(text[i+1:]), 0, 32)
	if err != nil || n < 1 || n > 15 {
		return p.bad("malformed setting %q: want a mask from 1 to 15", text)
	}
	if text[0] == 'w' {
		p.defWidth = int(n)
	} else {
		p.defSpeed = int(n)
	}
	return nil
}

func (p *ibParser) parseBlock(m []string) error {
	kind := Node
	switch m[1] {
	case "Switch":
		kind = Switch
	case "Rt":
		return p.bad("router nodes are not supported")
	}
	if _, dup := p.byID[m[3]]; dup {
		return p.bad("%s %q defined twice", m[1], m[3])
	}
	ports, _ := strconv.Atoi(m[2])
	if ports < 1 || ports > 254 {
		return p.bad("%s %q: port count %s out of range 1..254", m[1], m[3], m[2])
	}
	n := &ibNode{kind: kind, id: m[3], desc: m[3], ports: ports, line: p.line}
	if kind == Switch {
		n.guid, n.portGUID = p.swGUID, p.swGUID
		p.swGUID++
	} else {
		n.guid = p.caGUID
		p.caGUID += uint64(ports) + 1
	}
	if c := m[4]; c != "" {
		if d := ibDesc.FindStringSubmatch(c); d != nil {
			n.desc = d[1]
		}
		// Switches carry their LID on the block line; CAs on their port lines.
		if kind == Switch {
			p.lidLMC(n, c)
		}
	}
	p.nodes = append(p.nodes, n)
	p.byID[n.id] = n
	p.cur = n
	return nil
}

// lidLMC records the "lid N" and "lmc N" of a comment.
func (p *ibParser) lidLMC(n *ibNode, c string) {
	if l := ibLID.FindStringSubmatch(c); l != nil {
		if v, err := strconv.Atoi(l[1]); err == nil && v > 0 && v < 0xc000 {
			n.lid, n.lidKnown = v, true
		}
	}
	if l := ibLMC.FindStringSubmatch(c); l != nil {
		n.lmc, _ = strconv.Atoi(l[1])
	}
}

func (p *ibParser) parsePort(text string) error {
	cur := p.cur
	if cur == nil {
		return p.bad("port line outside a Switch or Ca block")
	}
	m := ibPort.FindStringSubmatch(text)
	if m == nil {
		return p.bad("malformed port line %q", text)
	}
	lp, _ := strconv.Atoi(m[1])
	rp := 1 // ibsim's default remote port
	if m[4] != "" {
		rp, _ = strconv.Atoi(m[4])
	}
	if lp < 1 || lp > 255 || rp < 1 || rp > 255 {
		return p.bad("port number out of range 1..255")
	}
	if lp > cur.ports {
		return p.bad("port %d of %q, which has %d ports", lp, cur.id, cur.ports)
	}
	mbps, err := p.linkMbps(m[6], m[7])
	if err != nil {
		return err
	}
	if cur.kind != Switch && cur.firstPort == 0 {
		cur.firstPort = lp
		cur.portGUID = cur.guid + uint64(lp) // ibsim: port p of a CA has GUID node+p
		if m[2] != "" {
			cur.portGUID, _ = parseGUID(m[2])
		}
		if c := m[6] + m[7]; c != "" {
			// "lid 9", or "# lid 5 lmc 0 "leaf0" lid 3 4xEDR": the first lid is the CA's own.
			p.lidLMC(cur, c)
		}
	}
	return p.addLink(ibEnd{cur.id, lp}, ibEnd{m[3], rp}, mbps)
}

// linkMbps is the capacity of a port line: its ibsim w=/s= masks, its ibnetdiscover comment
// ("4xEDR"), or 100 Gb/s.
func (p *ibParser) linkMbps(opts, comment string) (float64, error) {
	if s := ibSpeed.FindStringSubmatch(comment); s != nil {
		w, _ := strconv.Atoi(s[1])
		return float64(w) * laneGbps[s[2]] * 1000, nil
	}
	width, speed := p.defWidth, p.defSpeed
	for _, o := range strings.Fields(opts) {
		if len(o) < 2 || o[1] != '=' {
			continue // lid N, lmc N
		}
		n, err := strconv.ParseInt(o[2:], 0, 32)
		if err != nil || n < 1 || n > 15 {
			return 0, p.bad("link option %q: want a mask from 1 to 15", o)
		}
		if o[0] == 'w' {
			width = int(n)
		} else {
			speed = int(n)
		}
	}
	if width == 0 && speed == 0 {
		return 100000, nil
	}
	lanes, gbps := 4, 2.0 // ibsim's default: 4x SDR
	for bit, w := range []int{1, 4, 8, 12} {
		if width&(1<<bit) != 0 {
			lanes = w
		}
	}
	for bit, g := range []float64{2, 4, 8} {
		if speed&(1<<bit) != 0 {
			gbps = g
		}
	}
	return float64(lanes) * gbps * 1000, nil
}

func (p *ibParser) addLink(a, b ibEnd, mbps float64) error {
	if a == b {
		return p.bad("port linked to itself")
	}
	if q, ok := p.peer[a]; ok {
		if q != b {
			return p.bad("%s port %d linked to %s[%d] here but to %s[%d] before", a.id, a.port, b.id, b.port, q.id, q.port)
		}
		return nil // the other end's line, already recorded
	}
	if q, ok := p.peer[b]; ok && q != a {
		return p.bad("%s port %d linked to %s[%d] here but to %s[%d] before", b.id, b.port, a.id, a.port, q.id, q.port)
	}
	p.peer[a], p.peer[b] = b, a
	p.links = append(p.links, ibLink{a: a, b: b, mbps: mbps, line: p.line})
	return nil
}

// build checks the links' far ends and assembles the fabric.
func (p *ibParser) build() (*Fabric, error) {
	for _, l := range p.links {
		n := p.byID[l.b.id]
		if n == nil {
			p.line = l.line
			return nil, p.bad("link to %q, which has no Switch or Ca block", l.b.id)
		}
		if l.b.port > n.ports {
			p.line = l.line
			return nil, p.bad("link to port %d of %q, which has %d ports", l.b.port, l.b.id, n.ports)
		}
	}
	if len(p.nodes) == 0 {
		return nil, &Error{File: p.file, Msg: "no Switch or Ca blocks"}
	}
	// Vertex order: CAs in file order, then switches by GUID.
	var order []*ibNode
	for _, n := range p.nodes {
		if n.kind != Switch {
			if n.portGUID == 0 {
				n.portGUID = n.guid + 1
			}
			order = append(order, n)
		}
	}
	nca := len(order)
	for _, n := range p.nodes {
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
	level := ibLevels(order, nca, p.links, vid)
	b := ibVertices(p.file, order, level, len(p.links))
	links := p.orderLinks(order, level, vid)
	f := p.fabric(order)
	f.physA = make([]uint16, len(links))
	f.physB = make([]uint16, len(links))
	seg := map[Kind]string{Node: "ca", Switch: "switch"}
	for i, l := range links {
		a, bb := vid[l.a.id], vid[l.b.id]
		b.AddLink(a, bb, l.mbps, 0.1, seg[order[a].kind])
		f.physA[i], f.physB[i] = uint16(l.a.port), uint16(l.b.port)
	}
	g, err := b.Build()
	if err != nil {
		return nil, &Error{File: p.file, Msg: err.Error()}
	}
	f.Graph = g
	return f, nil
}

// ibVertices starts the graph with its vertices, named by their description (their id when
// the description is empty or taken).
func ibVertices(file string, order []*ibNode, level []int, nlinks int) *Builder {
	b := &Builder{Name: file}
	b.Grow(len(order), nlinks)
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
	return b
}

// ibLevels returns each vertex's hops from the nearest switch with a CA (-1 for CAs and switches
// that reach none).
func ibLevels(order []*ibNode, nca int, links []ibLink, vid map[string]VertexID) []int {
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
	return level
}

// orderLinks puts the child first on each link (the CA, or the lower switch) and sorts the links
// by their child and its port, the order the Builder numbers ports in.
func (p *ibParser) orderLinks(order []*ibNode, level []int, vid map[string]VertexID) []ibLink {
	links := p.links
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
	return links
}

// fabric records the identities of the vertices: GUIDs always (the file's, or ibsim's), LIDs
// where the file gives them, other LIDs numbered after the highest given (known only as unknown).
func (p *ibParser) fabric(order []*ibNode) *Fabric {
	f := &Fabric{guid: make([]uint64, len(order)), portGUID: make([]uint64, len(order)), lid: make([]uint16, len(order)),
		desc: make([]string, len(order)), lidKnown: make([]bool, len(order)), guidKnown: true}
	nextLID := 0
	for _, n := range order {
		if n.lidKnown {
			nextLID = max(nextLID, n.lid)
		}
	}
	for i, n := range order {
		f.guid[i], f.portGUID[i], f.desc[i] = n.guid, n.portGUID, n.desc
		f.lmc = max(f.lmc, n.lmc)
		if n.lidKnown {
			f.lid[i], f.lidKnown[i] = uint16(n.lid), true
			continue
		}
		nextLID++
		f.lid[i] = uint16(nextLID)
	}
	return f
}
