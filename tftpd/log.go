package tftpd

import (
	"fmt"
	"net/netip"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// requestLog is what every log line about one request says, as an operator
// greps for it: the client's address ("remote"), the file it asked for
// ("filename"), the transfer mode and options ("mode", "options") when the
// request parsed, and the node's name ("node") when Config.NodeName knows the
// address. The server's name comes with the Logger (bootsrv adds "server"),
// as in dhcpd, whose lines carry the same "node" field. The fields are built
// only when a line is logged.
type requestLog struct {
	remote   netip.AddrPort
	filename string
	req      *request
	nodeName func(netip.Addr) (string, bool)
}

// requestLog is the log context of a request from remote for filename;
// req is nil when the request did not parse.
func (s *Server) requestLog(remote netip.AddrPort, filename string, req *request) requestLog {
	return requestLog{remote: remote, filename: filename, req: req, nodeName: s.nodeName}
}

// fields are the request's fields, then extra.
func (l requestLog) fields(extra ...zap.Field) []zap.Field {
	f := make([]zap.Field, 0, 5+len(extra))
	f = append(f, zap.Stringer("remote", l.remote))
	if l.filename != "" || l.req != nil {
		f = append(f, zap.String("filename", clip(l.filename)))
	}
	if l.req != nil {
		f = append(f, zap.String("mode", clip(l.req.mode)), zap.String("options", clip(l.req.optionString())))
	}
	if l.nodeName != nil {
		if name, ok := l.nodeName(l.remote.Addr()); ok {
			f = append(f, zap.String("node", name))
		}
	}
	return append(f, extra...)
}

// logRequest logs msg at level with the fields of request l, then extra.
func (s *Server) logRequest(level zapcore.Level, msg string, l requestLog, extra ...zap.Field) {
	if ce := s.log.Check(level, msg); ce != nil {
		ce.Write(l.fields(extra...)...)
	}
}

// maxLoggedText bounds what a log line repeats of a client's words (file name, mode, options): a
// request may carry up to a datagram of them, and a line per spoofed datagram should not.
const maxLoggedText = 256

// clip returns s cut to maxLoggedText bytes, saying how long it was when it cuts.
func clip(s string) string {
	if len(s) <= maxLoggedText {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:maxLoggedText], len(s))
}
