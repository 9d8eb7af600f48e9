package bootsrv

// The boot page: a read-only web page under /ui/ that shows every node of this server by state,
// laid out by board (the topology's level above the nodes) or by inventory group, with the curve of
// nodes healthy over time as the server measured it. It reads what the status API reads and is
// open to the same clients (docs/security.md); it changes nothing. The page follows the server
// through server-sent events (/ui/events): one snapshot of the tracker per second at most, shared
// by every watcher, sent to a watcher only when it changed, to at most maxWatchers watchers.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"path"
	"slices"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/nodestate"
	"go.uber.org/zap"
)

//go:embed web/index.html web/app.js web/app.css web/favicon.svg
var webFiles embed.FS

// Bounds of the page's event stream. A watcher costs one connection and one write per change; the
// snapshot is built once per webPoll whatever the number of watchers.
const (
	// maxWatchers bounds the open event streams; one more is answered 503.
	maxWatchers = 32
	// maxWatchersPerAddr keeps one host from taking every watcher slot.
	maxWatchersPerAddr = 4
	// webPoll is how often a stream looks for a change.
	webPoll = time.Second
	// webKeepAlive is how often a stream with no change sends the server's clock (and proves the
	// connection alive to proxies that close idle ones).
	webKeepAlive = 15 * time.Second
	// webStreamLife ends a stream; the browser reconnects (the retry the stream sets), so a
	// watcher never holds a slot for ever and http.write_timeout never cuts a stream mid-event.
	webStreamLife = 5 * time.Minute
	// webWriteTimeout drops a watcher that stops reading.
	webWriteTimeout = 20 * time.Second
	// webMaxError bounds a node's error shown on the page (a failed node's health details are the
	// node's own text and reach the page only through textContent).
	webMaxError = 200
)

// WebView is what the page shows: the body of each event of /ui/events (inside WebEvent).
type WebView struct {
	Server string `json:"server"`
	// Layout names what the groups are: a topology level ("board"), "group" (the inventory's
	// groups) or "all".
	Layout string     `json:"layout"`
	Groups []WebGroup `json:"groups"`
	// States counts the nodes by state, every state in boot order, zeros included.
	States []WebCount `json:"states"`
	Curve  WebCurve   `json:"curve"`
}

// WebGroup is one board or group of nodes.
type WebGroup struct {
	Name  string    `json:"name"`
	Nodes []WebNode `json:"nodes"`
}

// WebNode is one node on the page.
type WebNode struct {
	Name     string    `json:"name"`
	State    string    `json:"state"`
	Since    time.Time `json:"since,omitzero"`
	Attempt  int       `json:"attempt"`
	Position string    `json:"position,omitempty"`
	Profile  string    `json:"profile,omitempty"`
	Error    string    `json:"error,omitempty"`
}

// WebCount is the number of nodes in one state.
type WebCount struct {
	State string `json:"state"`
	Nodes int    `json:"nodes"`
}

// WebCurve is the boot as the server measured it: the start and, in seconds after it, when each
// healthy node became healthy (sorted), for the page's curve of nodes healthy over time. Without
// a run, the curve is every node's and starts with the current attempts. Once a bootctl boot run
// announced its prediction (Run names it), the curve is the run's nodes' since the run's start,
// and Prediction their predicted times to healthy (sorted).
type WebCurve struct {
	Run        string    `json:"run,omitempty"`
	Start      time.Time `json:"start,omitzero"`
	Nodes      int       `json:"nodes"`
	Healthy    []float64 `json:"healthy"`
	Failed     int       `json:"failed"`
	Prediction []float64 `json:"prediction,omitempty"`
}

// WebEvent is one server-sent event's data: the server's clock (the page counts "since" with it,
// not with the browser's) and, when it changed, the view.
type WebEvent struct {
	At   time.Time `json:"at"`
	View *WebView  `json:"view,omitempty"`
}

// webAsset is an embedded file with what its answer needs.
type webAsset struct {
	body        []byte
	contentType string
	etag        string
}

// webFeed serves one HTTP server's page: its assets, and the event streams with the shared
// snapshot and the watcher count.
type webFeed struct {
	s      *Server
	assets map[string]webAsset

	mu      sync.Mutex
	builtAt time.Time
	view    []byte // the latest view's JSON
	version uint64 // counts changes of view
	total   int
	perAddr map[netip.Addr]int

	hookOnce sync.Once
	stop     chan struct{} // closed when the HTTP server shuts down
}

// webRoutes adds the page's routes through route (Handler's): each call of Handler makes one feed,
// for the one http.Server that uses it.
func (s *Server) webRoutes(route func(string, http.HandlerFunc)) {
	f := &webFeed{s: s, assets: map[string]webAsset{}, perAddr: map[netip.Addr]int{}, stop: make(chan struct{})}
	for name, ct := range map[string]string{"index.html": "text/html; charset=utf-8", "app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8", "favicon.svg": "image/svg+xml"} {
		b, err := webFiles.ReadFile("web/" + name)
		if err != nil {
			panic(fmt.Sprintf("bootsrv: embedded web/%s: %v", name, err)) // a build without the files is a broken build
		}
		sum := sha256.Sum256(b)
		f.assets[name] = webAsset{body: b, contentType: ct, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
	}
	route("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui/", http.StatusFound)
	})
	route("GET /ui/{$}", func(w http.ResponseWriter, r *http.Request) { f.serveAsset(w, r, "index.html") })
	route("GET /ui/events", f.serveEvents)
	route("GET /ui/{file}", func(w http.ResponseWriter, r *http.Request) { f.serveAsset(w, r, r.PathValue("file")) })
}

// pageHeaders are every page answer's headers: the page runs only its own script and style and
// talks only to this server, so a node's hostile text cannot run as script nor load anything.
func pageHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func (f *webFeed) serveAsset(w http.ResponseWriter, r *http.Request, name string) {
	a, ok := f.assets[path.Base(name)]
	if !ok || path.Base(name) != name {
		http.NotFound(w, r)
		return
	}
	pageHeaders(w.Header())
	w.Header().Set("Content-Type", a.contentType)
	w.Header().Set("ETag", a.etag)
	w.Header().Set("Cache-Control", "no-cache") // revalidate: a new bootctl brings a new page
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// claim takes a watcher slot for addr, or says why there is none.
func (f *webFeed) claim(addr netip.Addr) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.perAddr[addr] >= maxWatchersPerAddr {
		return fmt.Errorf("%s has %d pages watching this server already (the most one address gets)", addr, maxWatchersPerAddr)
	}
	if f.total >= maxWatchers {
		return fmt.Errorf("%d pages are watching this server already (the most it serves); try again later", maxWatchers)
	}
	f.total++
	f.perAddr[addr]++
	return nil
}

func (f *webFeed) release(addr netip.Addr) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.total--
	if f.perAddr[addr]--; f.perAddr[addr] <= 0 {
		delete(f.perAddr, addr)
	}
}

// snapshot returns the latest view and its version, building it anew when the one held is older
// than webPoll: however many watchers ask, the tracker is read once per webPoll. now is the
// host's clock, not the tracker's (which a test may hold still).
func (f *webFeed) snapshot(now time.Time) ([]byte, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.view != nil && now.Sub(f.builtAt) < webPoll && !now.Before(f.builtAt) {
		return f.view, f.version
	}
	v := buildWebView(f.s, f.s.tracker.Nodes())
	b, err := json.Marshal(v)
	if err != nil {
		// Nothing in a view can fail to encode; keep the last one rather than send nothing.
		f.s.log.Error("encoding the boot page's view", zap.Error(err))
		return f.view, f.version
	}
	f.builtAt = now
	if !bytes.Equal(b, f.view) {
		f.view = b
		f.version++
	}
	return f.view, f.version
}

// serveEvents streams the view to a page (stream) once it has a watcher slot.
func (f *webFeed) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead {
		// A HEAD has no body to stream: answering with the headers keeps it from holding a slot.
		pageHeaders(w.Header())
		w.Header().Set("Content-Type", "text/event-stream")
		return
	}
	hs, served := r.Context().Value(http.ServerContextKey).(*http.Server)
	if served {
		// Shutdown does not cancel requests in flight: a stream would hold it for its 5 s.
		f.hookOnce.Do(func() { hs.RegisterOnShutdown(func() { close(f.stop) }) })
	}
	from := remoteAddr(r)
	if err := f.claim(from); err != nil {
		f.s.reqLog(r, "").Info("boot page watcher refused", zap.Error(err))
		w.Header().Set("Retry-After", "30")
		apiError(w, http.StatusServiceUnavailable, "%v", err)
		return
	}
	defer f.release(from)
	ctx, cancel := context.WithTimeout(r.Context(), webStreamLife)
	defer cancel()
	pageHeaders(w.Header())
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no") // nginx would hold the events back
	f.stream(ctx, eventWriter(w), served)
}

// eventWriter returns a function that writes and flushes one event, with webWriteTimeout to do it,
// and says whether it could.
func eventWriter(w http.ResponseWriter) func([]byte) bool {
	rc := http.NewResponseController(w)
	return func(b []byte) bool {
		if err := rc.SetWriteDeadline(time.Now().Add(webWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return false
		}
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
}

// stream sends an event at once, then one when the view changes, and the server's clock every
// webKeepAlive, until ctx ends (webStreamLife, or the page gone), the server shuts down or a write
// fails. Without an HTTP server behind the request (served false: the handler called directly, by
// a fuzzer or a recorder) no connection can end the stream, so the first event is the whole answer.
func (f *webFeed) stream(ctx context.Context, send func([]byte) bool, served bool) {
	if !send([]byte("retry: 3000\n\n")) {
		return
	}
	var sent uint64
	var lastSend time.Time
	tick := time.NewTicker(webPoll)
	defer tick.Stop()
	for {
		view, version := f.snapshot(time.Now())
		if version != sent || time.Since(lastSend) >= webKeepAlive {
			b, err := marshalEvent(f.s.tracker.Now().UTC(), view, version != sent)
			if err != nil || !send(b) {
				return
			}
			sent, lastSend = version, time.Now()
		}
		if !served {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-f.stop:
			return
		case <-tick.C:
		}
	}
}

// marshalEvent writes one server-sent event: the clock, and the view's JSON when withView.
func marshalEvent(now time.Time, view []byte, withView bool) ([]byte, error) {
	at, err := json.Marshal(now)
	if err != nil {
		return nil, fmt.Errorf("encoding the clock: %w", err)
	}
	b := append([]byte(`data: {"at":`), at...)
	if withView {
		b = append(b, `,"view":`...)
		b = append(b, view...) // compact JSON: one line, as an event's data line must be
	}
	return append(b, "}\n\n"...), nil
}

// buildWebView lays the nodes out for the page. It depends only on its arguments and the server's
// configuration, so the same states give the same bytes.
func buildWebView(s *Server, nodes []nodestate.NodeStatus) *WebView {
	v := &WebView{Server: s.cfg.Servers[s.cfg.ServerID].Name, Groups: []WebGroup{}}
	key, layout := s.webGrouping()
	v.Layout = layout
	counts := make(map[nodestate.State]int)
	index := map[string]int{}
	rank := map[string]int{}
	for _, n := range nodes {
		counts[n.State]++
		g := key(n.Name)
		i, ok := index[g.name]
		if !ok {
			i = len(v.Groups)
			index[g.name], rank[g.name] = i, g.rank
			v.Groups = append(v.Groups, WebGroup{Name: g.name})
		}
		v.Groups[i].Nodes = append(v.Groups[i].Nodes, webNode(n))
	}
	// Boards in the machine's order, groups in the inventory's, whatever order the nodes came in.
	slices.SortStableFunc(v.Groups, func(a, b WebGroup) int { return rank[a.Name] - rank[b.Name] })
	for _, st := range nodestate.States() {
		v.States = append(v.States, WebCount{State: st.String(), Nodes: counts[st]})
	}
	v.Curve = measuredCurve(nodes)
	if run := s.runs.current(); run != nil {
		v.Curve = runCurve(nodes, run)
	}
	return v
}

func webNode(n nodestate.NodeStatus) WebNode {
	e := n.Error
	if len(e) > webMaxError {
		e = e[:webMaxError] + "..."
	}
	w := WebNode{Name: n.Name, State: n.State.String(), Since: n.Since.UTC(), Attempt: n.Attempt, Profile: n.Profile, Error: e}
	if n.Position != n.Name {
		w.Position = n.Position // a flat machine's positions are the names: not twice per node
	}
	return w
}

// webGroupKey is the group a node goes in and the group's rank (its place on the page).
type webGroupKey struct {
	name string
	rank int
}

// webGrouping chooses the layout: by the level above the nodes of a configured topology (boards);
// else, on a flat machine, by each node's first inventory group when any node has one (the
// admin's own names say more than the switches the server made up), else by the flat machine's
// switches; else one group of every node.
func (s *Server) webGrouping() (func(name string) webGroupKey, string) {
	inv := s.Authority().Inventory()
	if key, layout, ok := webGroupsOf(inv); ok && s.cfg.Topology == "" {
		return key, layout
	}
	if h := s.hier; h != nil && len(h.Levels()) >= 2 {
		l := len(h.Levels()) - 2
		return func(name string) webGroupKey {
			n, ok := inv.ByName(name)
			if !ok {
				return webGroupKey{"(not in the inventory)", h.Total(l)}
			}
			b := h.Block(n.Index, l)
			return webGroupKey{h.BlockName(b, l), b}
		}, h.Levels()[l].Name
	}
	if key, layout, ok := webGroupsOf(inv); ok {
		return key, layout
	}
	return func(string) webGroupKey { return webGroupKey{"all nodes", 0} }, "all"
}

// webGroupsOf groups nodes by their first inventory group, in the inventory's order, when any node
// has a group.
func webGroupsOf(inv *bootconfig.Inventory) (func(name string) webGroupKey, string, bool) {
	ranks := map[string]int{}
	for i := range inv.Nodes {
		if g := inv.Nodes[i].Groups; len(g) > 0 {
			if _, ok := ranks[g[0]]; !ok {
				ranks[g[0]] = len(ranks)
			}
		}
	}
	if len(ranks) == 0 {
		return nil, "", false
	}
	return func(name string) webGroupKey {
		if n, ok := inv.ByName(name); ok && len(n.Groups) > 0 {
			return webGroupKey{n.Groups[0], ranks[n.Groups[0]]}
		}
		return webGroupKey{"(no group)", len(ranks)}
	}, "group", true
}

// measuredCurve is the boot as the server saw it: the current attempts start at the earliest time
// any node entered a state of its attempt, and each healthy node adds its time to healthy.
func measuredCurve(nodes []nodestate.NodeStatus) WebCurve {
	c := WebCurve{Nodes: len(nodes), Healthy: []float64{}}
	for _, n := range nodes {
		if n.State == nodestate.Pending {
			continue
		}
		for st, at := range n.Times {
			if st != nodestate.Pending && !at.IsZero() && (c.Start.IsZero() || at.Before(c.Start)) {
				c.Start = at
			}
		}
	}
	for _, n := range nodes {
		switch n.State {
		case nodestate.Healthy:
			if at, ok := n.Times[nodestate.Healthy]; ok && !c.Start.IsZero() {
				c.Healthy = append(c.Healthy, at.Sub(c.Start).Round(time.Millisecond).Seconds())
			}
		case nodestate.Failed:
			c.Failed++
		}
	}
	slices.Sort(c.Healthy)
	c.Start = c.Start.UTC()
	return c
}
