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
// the server is stopping or the client's port has a transfer running.
// local is the address the request came to (the zero Addr: any).
//
// A client whose OACK or first block was lost sends its request again from
// the same port (curl after 12 s). A second transfer to that port would
// never be acknowledged (the client follows the first), and when it gave up
// its ERROR would end the client's good transfer: in a 500-node storm that
// failed curl with exit 71 (issue 24). The running transfer resends what
// was lost on its own.
func (s *Server) startTransfer(req request, remote netip.AddrPort, local netip.Addr) {
	select {
	case <-s.stopping:
		return
	default:
	}
	if !s.claimPeer(remote) {
		s.m.repeated.Inc()
		s.logRequest(zap.DebugLevel, "tftp request repeated while its transfer runs; ignored", s.requestLog(remote, req.filename, &req))
		return
	}
	s.transfers.Add(1)
	go func() {
		defer s.transfers.Done()
		defer s.releasePeer(remote)
		s.serveTransfer(req, remote, local)
	}()
}

// claimPeer records a transfer to client port remote; false when one runs
// already.
func (s *Server) claimPeer(remote netip.AddrPort) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.peers[remote]; ok {
		return false
	}
	s.peers[remote] = struct{}{}
	return true
}

func (s *Server) releasePeer(remote netip.AddrPort) {
	s.mu.Lock()
	delete(s.peers, remote)
	s.mu.Unlock()
}

// serveTransfer answers one read request that pin/tftp's sender does not
// serve (pinServes): in the windowed sender, with the window the request
// negotiates (windowsize 2 or more: UEFI firmware asks for 4; one, lock-step,
// for a block size below 512).
func (s *Server) serveTransfer(req request, remote netip.AddrPort, local netip.Addr) {
	s.serveWindowed(req, remote, local)
}

// serveWindowed runs a transfer in the windowed sender, with the window
// req negotiates (one when it asks for none).
func (s *Server) serveWindowed(req request, remote netip.AddrPort, local netip.Addr) {
	rl := s.requestLog(remote, req.filename, &req)
	laddr := &net.UDPAddr{}
	if local.IsValid() {
		laddr.IP = local.AsSlice()
	}
	// The transfer's own port is its TID (RFC 1350); connecting the socket
	// keeps datagrams from other TIDs out, and lets the kernel report an
	// ICMP port unreachable from the client as an error on it.
	conn, err := net.DialUDP("udp", laddr, net.UDPAddrFromAddrPort(remote))
	if err != nil {
		s.logRequest(zap.WarnLevel, "tftp: cannot open a transfer socket", rl, zap.Error(err))
		return
	}
	defer conn.Close()
	if !s.track(conn) {
		return
	}
	defer s.untrack(conn)
	until := time.Now().Add(s.maxTransferTime)
	refusal := s.serveRead(rl, func(r io.Reader, size int64) (sendStats, error) {
		r, size = textMode(req, r, size)
		p, timeout := s.negotiate(req, size)
		w := &windowSender{conn: conn, p: p, timeout: timeout,
			retries: s.retries, stopping: s.stopping, until: until, limit: s.maxTransferTime}
		err := w.run(r)
		if sendFailure(err) {
			conn.Write(errorPacket(errCodeUndefined, err.Error()))
		}
		return sendStats{blockSize: w.p.blockSize, windowSize: w.p.windowSize, retransmissions: w.retrans}, err
	})
	if refusal != nil {
		conn.Write(errorPacket(refusalCode(refusal), refusal.Error()))
	}
}

// negotiate answers req's options for a file of size bytes within the server's ceilings, and
// gives the retransmission timeout: the one the client asked for (capped) or the server's.
func (s *Server) negotiate(req request, size int64) (params, time.Duration) {
	p := negotiate(req, size, s.blockCap, s.maxClientTimeout)
	if p.timeout > 0 {
		return p, p.timeout
	}
	return p, s.timeout
}

// textMode converts a netascii transfer's line ends; its size on the wire
// then differs from the file's, so it gets no tsize (-1).
func textMode(req request, r io.Reader, size int64) (io.Reader, int64) {
	if req.mode == "netascii" {
		return netascii.ToReader(r), -1
	}
	return r, size
}

// sendFailure reports whether a sender's error is to be told to the
// client: not when the client ended the transfer or is gone.
func sendFailure(err error) bool {
	var pe *peerError
	return err != nil && !errors.As(err, &pe) && !errors.Is(err, errGone)
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
