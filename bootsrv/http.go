package bootsrv

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/promreg"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

// httpMetrics are the HTTP endpoint's collectors.
type httpMetrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	refused  prometheus.Counter
}

func newHTTPMetrics(reg prometheus.Registerer) (*httpMetrics, error) {
	m := &httpMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests by route and status code.",
		}, []string{"route", "code"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "bootfabric", Subsystem: "http", Name: "request_duration_seconds",
			Help:    "HTTP request handling time by route (for /boot, until the file is sent).",
			Buckets: prometheus.ExponentialBuckets(1e-4, 4, 10),
		}, []string{"route"}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "bootfabric", Subsystem: "http", Name: "connections_refused_total",
			Help: "Connections closed at once because their client address had http.max_conns_per_client open.",
		}),
	}
	if err := errors.Join(promreg.Register(reg, &m.requests), promreg.Register(reg, &m.latency), promreg.Register(reg, &m.refused)); err != nil {
		return nil, err
	}
	return m, nil
}

// Handler returns the HTTP endpoint: iPXE scripts, boot files, the node API, metrics and /healthz.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(pattern string, h http.HandlerFunc) {
		label := pattern[strings.IndexByte(pattern, ' ')+1:]
		mux.Handle(pattern, s.instrument(label, h))
	}
	route("GET /ipxe/{mac}", s.handleScript)
	route("GET /ipxe/bin/{file}", s.handleBinary)
	mux.Handle("GET /boot/{profile}/{file}", s.withProgress(s.instrument("/boot/{profile}/{file}", s.handleBootFile)))
	route("GET /api/v1/progress", s.handleProgress)
	route("GET /overlay/{node}/"+overlayFile, s.handleOverlay)
	route("POST /api/v1/nodes/{name}/health", s.handleHealth)
	route("POST /api/v1/nodes/{name}/reboot", s.handleReboot)
	route("POST /api/v1/nodes/{name}/power-off", s.handlePowerOff)
	route("POST "+bootapi.RunPath, s.handleRun)
	route("GET /api/v1/nodes", s.handleNodes)
	route("GET /api/v1/nodes/{name}", s.handleNode)
	route("GET /api/v1/summary", s.handleSummary)
	route("GET /api/v1/fleet/membership", s.handleMembership)
	route("GET /blobs/sha256/{sum}", s.handleBlob)
	s.webRoutes(route)   // the boot page, /ui/ (web.go)
	s.swarmRoutes(route) // metainfo and tracker of peer delivery (swarm.go)
	route("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	var gather prometheus.Gatherer = s.reg
	if s.extra != nil {
		gather = prometheus.Gatherers{s.reg, s.extra}
	}
	mux.Handle("GET /metrics", s.instrument("/metrics", promhttp.HandlerFor(gather, promhttp.HandlerOpts{Registry: s.reg}).ServeHTTP))
	return mux
}

// statusWriter records the status code and the bytes written.
type statusWriter struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (s *Server) instrument(label string, h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w}
		h(sw, r)
		if sw.code == 0 {
			sw.code = http.StatusOK
		}
		s.httpm.requests.WithLabelValues(label, strconv.Itoa(sw.code)).Inc()
		took := time.Since(start)
		s.httpm.latency.WithLabelValues(label).Observe(took.Seconds())
		s.logRequest(r, sw, took)
	})
}

func writeJSONBody(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func apiError(w http.ResponseWriter, code int, format string, args ...any) {
	writeJSONBody(w, code, bootapi.ErrorBody{Error: fmt.Sprintf(format, args...)})
}

// parseMAC accepts aa:bb:cc:dd:ee:ff and aa-bb-cc-dd-ee-ff (iPXE's ${mac} and ${mac:hexhyp}).
func parseMAC(s string) (net.HardwareAddr, error) {
	mac, err := net.ParseMAC(s)
	if err != nil || len(mac) != 6 {
		return nil, fmt.Errorf("%q is not a MAC address", s)
	}
	return mac, nil
}

// handleScript serves the node's iPXE script. Fetching it shows iPXE is running (state nbp). The
// script carries the node's token, so it goes only to the node's address (as smee serves scripts
// only to the address holding the lease); in proxy mode a node whose address is not known yet
// proves itself with the token of its DHCP boot file URL, and its address is learned from it.
func (s *Server) handleScript(w http.ResponseWriter, r *http.Request) {
	mac, err := parseMAC(r.PathValue("mac"))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	name, ok := s.tracker.NameByMAC(mac)
	if !ok {
		http.Error(w, fmt.Sprintf("no node with MAC %s is served by this boot server", mac), http.StatusNotFound)
		return
	}
	if s.cfg.DHCP.Mode == dhcpd.ModeOff {
		// No DHCP exchange here starts an attempt: the script fetch, from the node's
		// address, is the first sign of one.
		s.tracker.OpenAttempt(name)
	}
	st, _ := s.tracker.Node(name)
	c := s.nodeCheck(r, name, st)
	learn := s.cfg.DHCP.Mode == dhcpd.ModeProxy && !s.inventoryAddr(name)
	if learn {
		// Proxy mode: another server gives the address, which may change from boot to boot; a
		// script fetch with the token of the DHCP boot file URL shows where the node is now.
		c.NodeIP = ""
		c.TokenOK = s.nodes.equal(s.nodes.addressToken(name), requestToken(r))
	} else {
		// The script is how the node learns its token: its address is the proof.
		c.TokenOK = true
	}
	if err := CheckNode(name, c); err != nil {
		s.reqLog(r, name).Info("iPXE script refused", zap.Error(err))
		refuse(w, err)
		return
	}
	if !s.claimOnce(w, r, name, st, nodestate.ScriptFile) {
		return
	}
	if learn {
		s.tracker.LearnIP(name, c.From)
	}
	script, err := s.script(name, st)
	if err != nil {
		s.reqLog(r, name).Error("rendering iPXE script", zap.Error(err))
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	// A node in no open attempt still gets its script (it must boot, and the token opens
	// nothing), but the fetch moves nothing: else a host holding an idle node's address would
	// put it past the DHCP exchange that starts its real attempt.
	if _, err := w.Write(script); err == nil && (s.cfg.DHCP.Mode == dhcpd.ModeOff || st.AttemptOpen()) {
		s.observe(s.reqLog(r, name), name, nodestate.EvScript, "GET "+r.URL.Path)
	}
}

// claimOnce records that file, which carries the node's token, goes out after the node's latest
// DHCP exchange, or answers 409 when it went out already: a host that takes the node's address
// after the node fetched it cannot fetch it again to learn the token; the node's own firmware or
// iPXE starting over makes a DHCP exchange first. It claims nothing when node authentication is
// off, outside an open attempt, or with DHCP off (where a script fetch is the only sign of an
// attempt).
func (s *Server) claimOnce(w http.ResponseWriter, r *http.Request, name string, st nodestate.NodeStatus, file nodestate.TokenFile) bool {
	if s.nodes.secret == nil || !st.AttemptOpen() || s.cfg.DHCP.Mode == dhcpd.ModeOff {
		return true
	}
	if s.tracker.ClaimServed(name, st.Attempt, file) {
		return true
	}
	msg := fmt.Sprintf("node %s: boot attempt %d's %s went out already since the node's last DHCP exchange; it goes out again after the next one", name, st.Attempt, file)
	s.reqLog(r, name).Info("token file refused", zap.String("reason", msg))
	apiError(w, http.StatusConflict, "%s", msg)
	return false
}

// script renders the iPXE script of a node, with the token of its current boot attempt.
func (s *Server) script(name string, st nodestate.NodeStatus) ([]byte, error) {
	p, err := s.images.Get(st.Profile)
	if err != nil {
		return nil, fmt.Errorf("node %s: %w", name, err)
	}
	health := s.baseURL + "/api/v1/nodes/" + name + "/health"
	tok := s.nodes.token(name, st.Attempt)
	if tok != "" {
		health += "?token=" + tok
	}
	return images.RenderScript(p, images.ScriptParams{
		Server: s.urlHost, Port: s.urlPort, Node: name, HealthURL: health, Token: tok,
		Overlay: s.overlayURL(name, st.Profile, tok),
	})
}

// handleBinary serves an iPXE binary for UEFI HTTP boot (dhcpd's default HTTPBootURL). Firmware
// cannot carry a token, so the delivery counts by the node's address alone.
func (s *Server) handleBinary(w http.ResponseWriter, r *http.Request) {
	file := r.PathValue("file")
	f, err := s.files.Binary(file)
	s.serveFile(w, r, f, err, file, nodestate.EvNBP, false)
}

// handleBootFile serves a profile's file; delivering the kernel or initrd advances the boot state
// of the node that fetched it.
func (s *Server) handleBootFile(w http.ResponseWriter, r *http.Request) {
	profile, file := r.PathValue("profile"), r.PathValue("file")
	ev := nodestate.EvNBP
	if p, err := s.images.Get(profile); err == nil {
		switch file {
		case p.Kernel:
			ev = nodestate.EvKernel
		case p.Initrd:
			ev = nodestate.EvInitrd
		}
	}
	f, err := s.files.bootFile(profile, file)
	s.serveFile(w, r, f, err, "boot/"+profile+"/"+file, ev, true)
}

// serveFile serves an opened file (or the error opening it) with ranges and then tells the boot
// state what happened: see downloadEvent.
func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, f *os.File, err error, path string, ev nodestate.Event, token bool) {
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrInvalid) {
			http.NotFound(w, r)
			return
		}
		// Among these: a symbolic link leading out of ipxe_dir or the image store (os.Root).
		s.reqLog(r, "").Warn("refusing a boot file", zap.String("file", path), zap.Error(err))
		http.NotFound(w, r)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		http.NotFound(w, r)
		return
	}
	s.limitRanges(r, fi.Size())
	sw, _ := w.(*statusWriter)
	http.ServeContent(w, r, filepath.Base(path), fi.ModTime(), f)
	if sw == nil {
		return
	}
	d := Delivery{Method: r.Method, Code: sw.code, Sent: sw.bytes, Size: fi.Size()}
	if got, ok := DownloadEvent(d, ev); ok {
		detail := "http " + path
		if got == nodestate.EvTransferFailed {
			detail = fmt.Sprintf("http %s: sent %d of %d bytes", path, sw.bytes, fi.Size())
		}
		s.observeDownload(r, got, detail, token)
	}
}

// limitRanges rewrites r's Range header for a file of size bytes before http.ServeContent sees it
// (CoalesceRanges): every route that serves a file goes through it.
func (s *Server) limitRanges(r *http.Request, size int64) {
	h := r.Header.Get("Range")
	if h == "" {
		return
	}
	if v := CoalesceRanges(h, size, s.cfg.HTTP.MaxRanges); v != "" {
		r.Header.Set("Range", v)
	} else {
		r.Header.Del("Range")
	}
}

// Delivery is what an HTTP download did.
type Delivery struct {
	Method     string
	Code       int
	Sent, Size int64
}

// DownloadEvent maps a download to the boot event it stands for, if any. It is pure. Only a full
// delivery (200 with every byte) moves a node forward, and a 200 cut short is a failed transfer; a
// HEAD, a range (206, even of the whole file) or an error says nothing about the boot.
func DownloadEvent(d Delivery, ev nodestate.Event) (nodestate.Event, bool) {
	if d.Method != http.MethodGet || d.Code != http.StatusOK {
		return 0, false
	}
	if d.Sent != d.Size {
		return nodestate.EvTransferFailed, true
	}
	return ev, true
}

// observeDownload attributes a download's event to the node with the request's source address,
// and only with that node's token when token is set and node authentication is on: neither another
// host nor a host of the boot network naming a node (the old ?node= parameter) moves a node.
func (s *Server) observeDownload(r *http.Request, ev nodestate.Event, detail string, token bool) {
	from := remoteAddr(r)
	name, ok := s.tracker.NameByIP(from)
	if !ok {
		return
	}
	if st, _ := s.tracker.Node(name); token && !s.nodes.check(name, st.Attempt, requestToken(r)) {
		s.reqLog(r, name).Debug("download without the node's token: not counted", zap.String("detail", detail))
		return
	}
	s.observe(s.reqLog(r, name), name, ev, detail)
}

// observe applies a boot event to the named node; log is the logger of the request that showed
// it, which names the node.
func (s *Server) observe(log *zap.Logger, name string, ev nodestate.Event, detail string) {
	if _, _, err := s.tracker.Observe(name, ev, detail); err != nil {
		log.Debug("event for a node not served here", zap.Stringer("event", ev))
	}
}

// handleHealth records a booted node's health report.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	st, ok := s.tracker.Node(name)
	if !ok {
		s.notServedHere(w, name)
		return
	}
	if err := CheckNode(name, s.nodeCheck(r, name, st)); err != nil {
		s.reqLog(r, name).Info("health report refused", zap.Error(err))
		refuse(w, err)
		return
	}
	rep, ok := decodeHealthReport(w, r, int64(s.cfg.Health.MaxReportBytes))
	if !ok {
		return
	}
	if st.Reported && st.Health != nil && st.Health.Status == rep.Status {
		// The same report again: a node whose first answer was lost (a timeout, a server killed
		// after it saved the report) retries it. It changes nothing, so it is answered as the
		// first was; a different status for a reported attempt is still refused below.
		writeJSONBody(w, http.StatusOK, bootapi.HealthResponse{Node: name, State: st.State})
		return
	}
	if !st.AttemptOpen() && s.nodes.secret != nil {
		msg := fmt.Sprintf("node %s: boot attempt %d takes no report (%s): a new attempt, with a new token, starts with the node's next DHCP request", name, st.Attempt, st.State)
		if st.Reported {
			msg = fmt.Sprintf("node %s: boot attempt %d was reported already; its token is spent", name, st.Attempt)
		}
		s.reqLog(r, name).Info("health report refused", zap.String("reason", msg))
		apiError(w, http.StatusConflict, "%s", msg)
		return
	}
	state, err := s.tracker.Report(name, nodestate.Health{Status: rep.Status, Details: rep.Details})
	if err != nil {
		apiError(w, http.StatusInternalServerError, "%v", err)
		return
	}
	// A node reports once: save before saying so, or a server killed within state_flush would
	// forget a healthy node that never reports again. When the store cannot be written (etcd
	// down) the state stays in memory and is retried; the node has done its part either way.
	if err := s.tracker.Flush(); err != nil {
		s.reqLog(r, name).Warn("saving a health report", zap.Error(err))
	}
	writeJSONBody(w, http.StatusOK, bootapi.HealthResponse{Node: name, State: state})
}

// notServedHere answers a request for a node this server does not track: 421 naming its server
// when it is an inventory node, else 404.
func (s *Server) notServedHere(w http.ResponseWriter, name string) {
	n, ok := s.auth.Inventory().ByName(name)
	if !ok {
		apiError(w, http.StatusNotFound, "unknown node %q", name)
		return
	}
	o := s.Authority().Owner(n)
	where := "no boot server"
	if o >= 0 && o < len(s.cfg.Servers) {
		where = fmt.Sprintf("boot server %s (%s)", s.cfg.Servers[o].Name, s.cfg.Servers[o].Address)
	}
	apiError(w, http.StatusMisdirectedRequest, "node %q is served by %s, not by this one", name, where)
}

// decodeHealthReport reads a health report of at most limit bytes, or answers why it cannot.
func decodeHealthReport(w http.ResponseWriter, r *http.Request, limit int64) (bootapi.HealthReport, bool) {
	var rep bootapi.HealthReport
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			apiError(w, http.StatusRequestEntityTooLarge, "body larger than %d bytes (health.max_report_bytes)", limit)
		case errors.Is(err, io.EOF):
			apiError(w, http.StatusBadRequest, `empty body: want JSON like {"status": "ok", "details": "..."}`)
		default:
			apiError(w, http.StatusBadRequest, `malformed body: %v; want JSON like {"status": "ok", "details": "..."}`, err)
		}
		return rep, false
	}
	if dec.More() {
		apiError(w, http.StatusBadRequest, "malformed body: more than one JSON value")
		return rep, false
	}
	if rep.Status != "ok" && rep.Status != "failed" {
		apiError(w, http.StatusBadRequest, `status %q: want "ok" or "failed"`, rep.Status)
		return rep, false
	}
	return rep, true
}

// handleReboot records the operator's reboot request for a node (bootctl node reboot): its next
// DHCP DISCOVER starts a new boot attempt even if it is booted or healthy.
func (s *Server) handleReboot(w http.ResponseWriter, r *http.Request) {
	name, st, ok := s.operatorNodeChange(w, r, "reboot requested by the operator", s.tracker.RequestReboot)
	if ok {
		writeJSONBody(w, http.StatusOK, bootapi.RebootResponse{Node: name, State: st.State, RebootRequested: true})
	}
}

// handlePowerOff records that the operator powered the node off (bootctl power off): it is
// pending again, not healthy, and its next DISCOVER starts a new attempt. It takes the operator
// token, as a reboot does: anyone else could otherwise make healthy nodes look off.
func (s *Server) handlePowerOff(w http.ResponseWriter, r *http.Request) {
	name, st, ok := s.operatorNodeChange(w, r, "node powered off by the operator", s.tracker.PowerOff)
	if ok {
		writeJSONBody(w, http.StatusOK, bootapi.PowerOffResponse{Node: name, State: st.State, PoweredOff: st.PoweredOff})
	}
}

// operatorNodeChange makes change to the node the request names, once the request proves it is
// the operator's, and saves it before the answer; ok false: the error is answered.
func (s *Server) operatorNodeChange(w http.ResponseWriter, r *http.Request, what string,
	change func(string) (nodestate.NodeStatus, error)) (string, nodestate.NodeStatus, bool) {
	if err := s.operatorAuth(r); err != nil {
		s.reqLog(r, "").Warn("operator request refused", zap.Error(err))
		refuse(w, err)
		return "", nodestate.NodeStatus{}, false
	}
	name := r.PathValue("name")
	st, err := change(name)
	if errors.Is(err, nodestate.ErrUnknownNode) {
		apiError(w, http.StatusNotFound, "unknown node %q", name)
		return "", st, false
	}
	if err != nil {
		apiError(w, http.StatusInternalServerError, "%v", err)
		return "", st, false
	}
	if err := s.tracker.Flush(); err != nil {
		s.reqLog(r, name).Warn("saving: "+what, zap.Error(err))
	}
	s.reqLog(r, name).Info(what, zap.Stringer("state", st.State))
	return name, st, true
}

func (s *Server) handleNodes(w http.ResponseWriter, r *http.Request) {
	nodes := s.tracker.Nodes()
	if want := r.URL.Query().Get("state"); want != "" {
		st, err := nodestate.ParseState(want)
		if err != nil {
			apiError(w, http.StatusBadRequest, "state: %v", err)
			return
		}
		kept := nodes[:0]
		for _, n := range nodes {
			if n.State == st {
				kept = append(kept, n)
			}
		}
		nodes = kept
	}
	resp := bootapi.NodesResponse{Server: s.cfg.Servers[s.cfg.ServerID].Name, ServerID: s.cfg.ServerID, Nodes: nodes}
	if r.URL.Query().Get("inventory") == "1" {
		resp.Inventory = s.inventoryEntries()
	}
	writeJSONBody(w, http.StatusOK, resp)
}

// inventoryEntries lists the inventory's nodes with their owners under the current ownership
// (in a fleet, the live servers').
func (s *Server) inventoryEntries() []bootapi.InventoryEntry {
	au := s.Authority()
	return InventoryEntries(au.Inventory(), func(n *bootconfig.InventoryNode) string {
		if o := au.Owner(n); o >= 0 && o < len(s.cfg.Servers) {
			return s.cfg.Servers[o].Name
		}
		return ""
	})
}

// InventoryEntries lists an inventory's nodes, in its order, with the owner that owner names.
func InventoryEntries(inv *bootconfig.Inventory, owner func(*bootconfig.InventoryNode) string) []bootapi.InventoryEntry {
	out := make([]bootapi.InventoryEntry, len(inv.Nodes))
	for i := range inv.Nodes {
		n := &inv.Nodes[i]
		e := bootapi.InventoryEntry{Name: n.Name, MAC: n.MAC.String(), Position: n.Position, Profile: n.Profile, Groups: n.Groups, Owner: owner(n)}
		if n.IP.IsValid() {
			e.IP = n.IP.String()
		}
		out[i] = e
	}
	return out
}

func (s *Server) handleNode(w http.ResponseWriter, r *http.Request) {
	n, ok := s.tracker.Node(r.PathValue("name"))
	if !ok {
		apiError(w, http.StatusNotFound, "unknown node %q", r.PathValue("name"))
		return
	}
	writeJSONBody(w, http.StatusOK, n)
}

func (s *Server) handleSummary(w http.ResponseWriter, _ *http.Request) {
	writeJSONBody(w, http.StatusOK, s.tracker.Summary())
}

// handleBlob serves an image blob by its sha256 to the peers of a fleet, which fetch what their
// own store lacks (images.FetchBlob) and check the bytes against the name themselves.
func (s *Server) handleBlob(w http.ResponseWriter, r *http.Request) {
	path, err := s.images.BlobPathBySum(r.PathValue("sum"))
	switch {
	case errors.Is(err, images.ErrBadSum):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case errors.Is(err, images.ErrNotFound):
		http.Error(w, err.Error(), http.StatusNotFound)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	f, err := s.files.Blob(path)
	if err != nil {
		http.Error(w, "cannot open blob "+r.PathValue("sum"), http.StatusNotFound)
		return
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		http.Error(w, "cannot open blob "+r.PathValue("sum"), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("ETag", `"`+r.PathValue("sum")+`"`) // the name is the content
	s.limitRanges(r, fi.Size())
	http.ServeContent(w, r, "", fi.ModTime(), f)
}
