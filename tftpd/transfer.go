package tftpd

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/netip"
	"time"

	"github.com/pin/tftp/v3/netascii"
	"go.uber.org/zap"
)

// errGone ends a transfer whose client is no longer there.
var errGone = errors.New("client went away")

// readAhead is how much of the file a transfer reads at once: blocks are
// cut from memory, not read from the file one system call each.
const readAhead = 256 << 10

// startTransfer runs a read transfer for req in its own goroutine, unless
// the server is stopping. local is the address the request came to (the
// zero Addr: any).
func (s *Server) startTransfer(req request, remote netip.AddrPort, local netip.Addr) {
	select {
	case <-s.stopping:
		return
	default:
	}
	s.transfers.Add(1)
	go func() {
		defer s.transfers.Done()
		s.serveTransfer(req, remote, local)
	}()
}

// serveTransfer answers one read request: RFC 7440 windows when the client
// asked for a window of 2 or more, lock-step (a window of one) otherwise.
func (s *Server) serveTransfer(req request, remote netip.AddrPort, local netip.Addr) {
	laddr := &net.UDPAddr{}
	if local.IsValid() {
		laddr.IP = local.AsSlice()
	}
	// The transfer's own port is its TID (RFC 1350); connecting the socket
	// keeps datagrams from other TIDs out, and lets the kernel report an
	// ICMP port unreachable from the client as an error on it.
	conn, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(remote))
	if err != nil {
		s.log.Warn("tftp: cannot open a transfer socket", zap.Stringer("remote", remote), zap.Error(err))
		return
	}
	defer conn.Close()
	if !s.track(conn) {
		return
	}
	defer s.untrack(conn)
	start := s.now()
	refusal := s.serveRead(req.filename, remote, func(r io.Reader, size int64) (sendStats, error) {
		if req.mode == "netascii" {
			// The size on the wire differs from the file's: no tsize.
			r, size = netascii.ToReader(r), -1
		}
		w := &windowSender{conn: conn, p: negotiate(req, size, s.blockCap, s.maxClientTimeout), timeout: s.timeout,
			retries: s.retries, stopping: s.stopping, until: start.Add(s.maxTransferTime), limit: s.maxTransferTime}
		if w.p.timeout > 0 {
			w.timeout = w.p.timeout
		}
		err := w.run(r)
		var pe *peerError
		if err != nil && !errors.As(err, &pe) && !errors.Is(err, errGone) {
			conn.Write(errorPacket(errCodeUndefined, err.Error()))
		}
		return sendStats{blockSize: w.p.blockSize, windowSize: w.p.windowSize, retransmissions: w.retrans}, err
	})
	if refusal != nil {
		conn.Write(errorPacket(refusalCode(refusal), refusal.Error()))
	}
}

// track registers a running transfer's socket so that Serve can cut its
// wait for an ACK short when it stops; false means the server is stopping.
func (s *Server) track(c *net.UDPConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-s.stopping:
		return false
	default:
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *Server) untrack(c *net.UDPConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// stop marks the server as stopping and wakes every transfer waiting for
// an ACK: each then sees stopping and ends at once, whatever its timeout.
// Holding mu orders this against track: a transfer registers before and
// is woken here, or registers after and sees stopping.
func (s *Server) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.stopping)
	for c := range s.conns {
		c.SetReadDeadline(time.Unix(1, 0))
	}
}

// bufferedFile reads a file readAhead bytes at a time.
func bufferedFile(r io.Reader) io.Reader { return bufio.NewReaderSize(r, readAhead) }
