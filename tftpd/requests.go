package tftpd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"go.uber.org/zap"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// Serve serves requests arriving on conn until ctx ends. pin/tftp's server
// (single-port mode) reads the port through pinPort, which hands it the
// lock-step read requests our checks admitted and their clients' ACKs, and
// dispatches the rest itself: windowed requests to a transfer of ours on a
// port of its own (transfer.go), refusals answered at once. Then it stops
// taking requests, cuts running transfers, waits for them and returns nil,
// or the error when the port fails under the loop. Serve owns conn and
// closes it.
func (s *Server) Serve(ctx context.Context, conn *net.UDPConn) error {
	select {
	case <-s.served:
		conn.Close()
		return errors.New("tftpd: Serve called twice")
	default:
		close(s.served)
	}
	port, err := newRequestPort(conn)
	if err != nil {
		conn.Close()
		return err
	}
	s.log.Info("tftp serving", zap.Stringer("addr", conn.LocalAddr()),
		zap.Int("max_blksize", s.blockCap), zap.Int("max_transfers", cap(s.slots)))

	pp := newPinPort(s, port)
	srv := newPinServer(pp)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(pp) }()
	select {
	case <-ctx.Done():
	case <-pp.failed: // the port failed under the loop
	}
	// stop first: no transfer starts after it (startTransfer and route check
	// stopping), and running ones are cut; then pin/tftp's loop ends once
	// they have.
	s.stop()
	pp.shutdown()
	srv.Shutdown()
	err = <-errc
	s.transfers.Wait()
	conn.Close()
	s.log.Info("tftp stopped", zap.Stringer("addr", conn.LocalAddr()))
	if err == nil {
		err = pp.failure()
	}
	if err != nil {
		return fmt.Errorf("tftpd: serving on %s: %w", conn.LocalAddr(), err)
	}
	return nil
}

// requestPort is the port requests come to, as the request loop reads it: with the
// packet-info control message, so that each transfer answers from the
// address its request came to.
type requestPort struct {
	conn *net.UDPConn
	v4   bool
	buf  []byte
	oob  []byte
}

func newRequestPort(conn *net.UDPConn) (*requestPort, error) {
	p := &requestPort{conn: conn, buf: make([]byte, 65536)}
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	p.v4 = la != nil && la.IP.To4() != nil
	var err error
	if p.v4 {
		err = ipv4.NewPacketConn(conn).SetControlMessage(ipv4.FlagDst, true)
		p.oob = ipv4.NewControlMessage(ipv4.FlagDst)
	} else {
		err = ipv6.NewPacketConn(conn).SetControlMessage(ipv6.FlagDst, true)
		p.oob = ipv6.NewControlMessage(ipv6.FlagDst)
	}
	if err != nil {
		return nil, fmt.Errorf("tftpd: enabling packet info on %s: %w", conn.LocalAddr(), err)
	}
	return p, nil
}

// dispatch handles datagram b, which came from client from to the address
// in control message oob.
func (s *Server) dispatch(p *requestPort, b []byte, from netip.AddrPort, oob []byte) {
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
			p.conn.WriteToUDPAddrPort(errorPacket(parseErrorCode(err), "bad request: "+err.Error()), from)
			return
		}
		s.startTransfer(req, from, p.local(oob))
	case opWRQ:
		s.m.transfers.WithLabelValues(string(OutcomeRefused)).Inc()
		if ce := s.log.Check(zap.InfoLevel, "tftp write refused"); ce != nil {
			ce.Write(s.writeRequestLog(b, from).fields()...) // parsed only when the line is written
		}
		p.conn.WriteToUDPAddrPort(errorPacket(errCodeAccess, errWrite.Error()), from)
	default:
		// ACKs, DATA and ERRORs for no transfer, and garbage: no answer, so
		// that the port cannot be used to reflect traffic.
		s.m.badRequests.Inc()
		s.logRequest(zap.DebugLevel, "tftp datagram dropped", s.requestLog(from, "", nil), zap.Int("opcode", op), zap.Int("bytes", len(b)))
	}
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
func (p *requestPort) local(oob []byte) netip.Addr {
	var dst net.IP
	if p.v4 {
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
