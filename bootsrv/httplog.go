package bootsrv

import (
	"fmt"
	"net/http"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// reqLog returns the logger of one HTTP request. Every line it writes carries what an operator
// greps for, as dhcpd's lines carry mac, xid, type, interface and node: the server's name (from
// the server's logger), the remote address, method and path, and the node's name and MAC when
// the request shows whose it is. node names the node when the caller knows it; "" lets the
// request say (the node named in the path, the MAC in the path, or the node holding the remote
// address). The fields are worked out only when a line is written.
func (s *Server) reqLog(r *http.Request, node string) *zap.Logger {
	return s.log.WithLazy(zap.Inline(httpRequest{s: s, r: r, node: node}))
}

// logRequest writes the debug line of every handled request, with its status code, the bytes
// sent and the time taken (the access log, off at the default level).
func (s *Server) logRequest(r *http.Request, sw *statusWriter, took time.Duration) {
	if ce := s.log.Check(zap.DebugLevel, "HTTP request"); ce != nil {
		ce.Write(zap.Inline(httpRequest{s: s, r: r}), zap.Int("code", sw.code), zap.Int64("bytes", sw.bytes), zap.Duration("took", took))
	}
}

// httpRequest is the fields of a request's log lines (see reqLog).
type httpRequest struct {
	s    *Server
	r    *http.Request
	node string
}

// MarshalLogObject implements zapcore.ObjectMarshaler.
func (h httpRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	enc.AddString("remote", h.r.RemoteAddr)
	enc.AddString("method", h.r.Method)
	enc.AddString("path", clipPath(h.r.URL.Path))
	node, mac := h.s.requestNode(h.r, h.node)
	if node != "" {
		enc.AddString("node", node)
	}
	if mac != "" {
		enc.AddString("mac", mac)
	}
	return nil
}

// requestNode says whose request r is, as far as it shows: node when given, else the inventory
// node named in the path ({name}), else the node with the path's MAC ({mac}), else the node that
// holds the remote address. It returns the node's name and MAC, either "" when unknown.
func (s *Server) requestNode(r *http.Request, node string) (name, mac string) {
	inv := s.auth.Inventory()
	if node == "" {
		if n, ok := inv.ByName(r.PathValue("name")); ok {
			node = n.Name
		}
	}
	if node == "" && r.PathValue("mac") != "" {
		hw, err := parseMAC(r.PathValue("mac"))
		if err != nil {
			return "", ""
		}
		if node, _ = s.tracker.NameByMAC(hw); node == "" {
			return "", hw.String() // a MAC this server does not serve: still worth the grep
		}
	}
	if node == "" {
		if node, _ = s.tracker.NameByIP(remoteAddr(r)); node == "" {
			if n, ok := inv.ByIP(remoteAddr(r)); ok {
				node = n.Name
			}
		}
	}
	if n, ok := inv.ByName(node); ok {
		return node, n.MAC.String()
	}
	return node, ""
}

// maxLoggedPath bounds the path a log line repeats: a client may send up to the 64 KiB header
// limit of it, on lines (refusals) it can provoke at will.
const maxLoggedPath = 256

// clipPath returns p cut to maxLoggedPath bytes, saying how long it was when it cuts.
func clipPath(p string) string {
	if len(p) <= maxLoggedPath {
		return p
	}
	return fmt.Sprintf("%s...(%d bytes)", p[:maxLoggedPath], len(p))
}
