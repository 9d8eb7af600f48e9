package bootsrv

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/tftpd"
)

// handleProgress answers GET /api/v1/progress, compact (no indentation): a run reads it from
// every server every poll.
func (s *Server) handleProgress(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(bootapi.ProgressResponse{Server: s.cfg.Servers[s.cfg.ServerID].Name, Nodes: s.tracker.Live()})
}

// withProgress counts the bytes of a boot file as they go out to the node that asked for it, so
// that /api/v1/progress shows the transfer while it runs. It wraps the instrumented handler
// (outside statusWriter, which serveFile reads). A request from an address no node holds, or
// without the node's token where tokens are checked, is not counted: another host of the boot
// network cannot make a node look slow or fast.
func (s *Server) withProgress(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := s.tracker.NameByIP(remoteAddr(r))
		if ok && r.Method == http.MethodGet {
			if st, _ := s.tracker.Node(name); !s.nodes.check(name, st.Attempt, requestToken(r)) {
				ok = false
			}
		}
		if !ok || r.Method != http.MethodGet {
			h.ServeHTTP(w, r)
			return
		}
		pw := &progressWriter{ResponseWriter: w, s: s, name: name, file: r.URL.Path}
		h.ServeHTTP(pw, r)
		pw.end()
	})
}

// progressWriter starts a transfer when a whole file's answer (200) begins and counts what is
// written.
type progressWriter struct {
	http.ResponseWriter
	s          *Server
	name, file string
	x          *nodestate.TransferHandle
	size, sent int64
}

func (w *progressWriter) WriteHeader(code int) {
	if code == http.StatusOK && w.x == nil {
		size, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64)
		if err != nil {
			size = -1
		}
		w.size = size
		w.x = w.s.tracker.StartTransfer(w.name, w.file, size)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *progressWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.sent += int64(n)
	w.x.Add(int64(n))
	return n, err
}

func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *progressWriter) end() {
	w.s.tracker.EndTransfer(w.name, w.x, w.sent, w.size, w.size >= 0 && w.sent == w.size)
}

// tftpStarted and tftpEnded keep a TFTP transfer's progress: tftpd says when it starts and
// ends, not in between, so the bytes show at the end.
func (s *Server) tftpStarted(i tftpd.TransferInfo) {
	if i.Path == "" {
		return // refused: no transfer
	}
	if name, ok := s.tracker.NameByIP(i.Remote.Addr()); ok {
		s.tracker.StartTransfer(name, "tftp/"+i.Path, -1)
	}
}

func (s *Server) tftpEnded(r tftpd.TransferResult) {
	if r.Path == "" || r.Outcome == tftpd.OutcomeProbe {
		return
	}
	if name, ok := s.tracker.NameByIP(r.Remote.Addr()); ok {
		file := "tftp/" + r.Path
		s.tracker.EndTransfer(name, s.tracker.CurrentTransfer(name, file), r.Bytes, r.Size, r.Outcome == tftpd.OutcomeOK)
	}
}
