package tftpd

import (
	"fmt"
	"net"
	"net/netip"

	"go.uber.org/zap"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// front is the TFTP port as pin/tftp sees it: it answers every datagram itself (read requests in
// this package's senders, which enforce the server's limits) and returns to pin/tftp's request
// loop only lock-step read requests in Anticipate mode, the burst mode this package lacks.
type front struct {
	*net.UDPConn
	s   *Server
	v4  bool
	buf []byte
	oob []byte
}

func newFront(s *Server, conn *net.UDPConn) (*front, error) {
	f := &front{UDPConn: conn, s: s, buf: make([]byte, 65536)}
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	f.v4 = la != nil && la.IP.To4() != nil
	var err error
	if f.v4 {
		err = ipv4.NewPacketConn(conn).SetControlMessage(ipv4.FlagDst, true)
		f.oob = ipv4.NewControlMessage(ipv4.FlagDst)
	} else {
		err = ipv6.NewPacketConn(conn).SetControlMessage(ipv6.FlagDst, true)
		f.oob = ipv6.NewControlMessage(ipv6.FlagDst)
	}
	if err != nil {
		return nil, fmt.Errorf("tftpd: enabling packet info on %s: %w", conn.LocalAddr(), err)
	}
	return f, nil
}

// ReadFrom implements net.PacketConn for pin/tftp's request loop (one
// goroutine): it handles datagrams itself and returns only those left to
// pin/tftp (lock-step read requests in Anticipate mode).
func (f *front) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, oobn, _, from, err := f.ReadMsgUDP(f.buf, f.oob)
		if err != nil {
			return 0, nil, err
		}
		if f.dispatch(f.buf[:n], from.AddrPort(), f.oob[:oobn]) {
			continue
		}
		return copy(p, f.buf[:n]), from, nil
	}
}

// dispatch handles one datagram on the TFTP port and reports whether it
// did; false leaves it to pin/tftp.
func (f *front) dispatch(b []byte, from netip.AddrPort, oob []byte) bool {
	s := f.s
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	op := -1
	if len(b) >= 2 {
		op = int(b[0])<<8 | int(b[1])
	}
	switch op {
	case opRRQ:
		req, err := parseRRQ(b)
		if err != nil {
			s.m.badRequests.Inc()
			s.logRequest(zap.InfoLevel, "tftp request refused", s.requestLog(from, "", nil), zap.Error(err))
			f.WriteToUDPAddrPort(errorPacket(parseErrorCode(err), "bad request: "+err.Error()), from)
			return true
		}
		if s.antic >= 2 && req.windowSize() < 2 {
			return false
		}
		s.startTransfer(req, from, f.local(oob))
	case opWRQ:
		s.m.transfers.WithLabelValues(string(OutcomeRefused)).Inc()
		if ce := s.log.Check(zap.InfoLevel, "tftp write refused"); ce != nil {
			ce.Write(s.writeRequestLog(b, from).fields()...) // parsed only when the line is written
		}
		f.WriteToUDPAddrPort(errorPacket(errCodeAccess, errWrite.Error()), from)
	default:
		// ACKs, DATA and ERRORs for no transfer, and garbage: no answer, so
		// that the port cannot be used to reflect traffic.
		s.m.badRequests.Inc()
		s.logRequest(zap.DebugLevel, "tftp datagram dropped", s.requestLog(from, "", nil), zap.Int("opcode", op), zap.Int("bytes", len(b)))
	}
	return true
}

// writeRequestLog is the log context of write request b from remote: with
// its file, mode and options when it parses.
func (s *Server) writeRequestLog(b []byte, remote netip.AddrPort) requestLog {
	wrq, err := parseRequest(b, opWRQ)
	if err != nil {
		return s.requestLog(remote, "", nil)
	}
	return s.requestLog(remote, wrq.filename, &wrq)
}

// local returns the address a datagram was sent to, from its control
// message: the transfer answers from it. It is the zero Addr when unknown
// or not unicast (a broadcast request is answered from the address routing
// picks).
func (f *front) local(oob []byte) netip.Addr {
	var dst net.IP
	if f.v4 {
		var cm ipv4.ControlMessage
		if cm.Parse(oob) == nil {
			dst = cm.Dst
		}
	} else {
		var cm ipv6.ControlMessage
		if cm.Parse(oob) == nil {
			dst = cm.Dst
		}
	}
	a, _ := netip.AddrFromSlice(dst)
	a = a.Unmap()
	if !a.IsValid() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return netip.Addr{}
	}
	return a
}
