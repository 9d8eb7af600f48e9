package tftpd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/pin/tftp/v3"
	"go.uber.org/zap"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// pinPort is the TFTP port as github.com/pin/tftp/v3's server reads it, in
// its single-port mode: pin/tftp's Serve loop calls ReadFrom, which reads
// the real socket and passes on only what pin/tftp is to see (lock-step read
// requests our checks admitted, and the ACKs and ERRORs of their clients);
// windowed requests go to our sender, refusals are answered here. pin/tftp's
// sender writes every datagram through WriteTo and learns of every ACK
// through ReadFrom, so the server keeps what it owes a hostile network on
// that path too: a transfer is cut (a forged ERROR from its client, which
// pin/tftp's sender takes as the end) when the server stops, when it runs
// past MaxTransferTime, and when its client's port is gone (ICMP port
// unreachable, seen with IP_RECVERR on the shared socket).
//
// Why single-port: in its default mode pin/tftp answers each transfer from
// a socket of its own that nothing outside the library can read, close or
// wake (server.go, handlePacket: net.ListenUDP into a connConnection), and
// its sender retries every net.Error (sender.go, sendWithRetry): a transfer
// waiting on a silent client could be neither stopped nor told its client
// is gone.
type pinPort struct {
	s *Server
	p *requestPort

	mu       sync.Mutex
	moved    *sync.Cond                      // signalled when ReadFrom is entered again (inflight cleared)
	xfers    map[netip.AddrPort]*pinTransfer // admitted lock-step transfers by client (zone-less)
	fakes    []netip.AddrPort                // clients whose transfer is to be handed a forged ERROR
	inflight netip.AddrPort                  // client of the datagram last handed to pin/tftp, until it asks for the next
	kicked   bool                            // the socket's read deadline is in the past to wake ReadFrom
	deadline time.Time                       // pin/tftp's read deadline (it sets one only when shutting down)
	shut     bool                            // Serve is stopping: ReadFrom may fail now
	failed   chan struct{}                   // closed when the socket failed under ReadFrom
	portErr  error
}

// pinTransfer is one lock-step transfer that pin/tftp's sender runs.
type pinTransfer struct {
	remote  netip.AddrPort // as the request came (the address answers go to)
	local   netip.Addr     // the address the request came to: answers come from it
	req     request
	rl      requestLog
	unknown bool      // acquire's answer, for release
	until   time.Time // MaxTransferTime from the request
	done    chan struct{}

	// Under pinPort.mu.
	closing   bool       // pin/tftp is ending the transfer: no datagram more is handed to it
	cut       error      // why the server ends it (stopping, limit, client gone); first wins
	refusal   error      // the file could not be served: this error is what the client is sent
	told      bool       // an ERROR went to the client
	peerErr   *peerError // the client's ERROR, when it sent one
	acked     uint64     // the last block the client acknowledged
	lastBlock int        // the last DATA block number sent (mod 65536), -1 before any
	dataSent  bool       // a DATA block went out
	ackedLast bool       // the client acknowledged lastBlock
	oackSent  bool
	retrans   int
}

func newPinPort(s *Server, p *requestPort) *pinPort {
	pp := &pinPort{s: s, p: p, xfers: make(map[netip.AddrPort]*pinTransfer), failed: make(chan struct{})}
	pp.moved = sync.NewCond(&pp.mu)
	// ICMP errors (a client's port closed) are reported on an unconnected
	// socket only with IP_RECVERR; without it a gone client held its slot
	// for every retry.
	if rc, err := p.conn.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) {
			if p.v4 {
				unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1)
				return
			}
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_RECVERR, 1)
			unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_RECVERR, 1) // v4-mapped clients of a dual-stack socket
		})
	}
	return pp
}

// newPinServer is pin/tftp's server over pp: the server's block size cap,
// timeout and retries; no backoff before a resend (pin/tftp's default
// sleeps up to 1 s at random); its MTU clamp off, as our sender has none.
func newPinServer(pp *pinPort) *tftp.Server {
	s := pp.s
	srv := tftp.NewServer(pp.serve, nil)
	srv.SetHook(pinHook{pp})
	srv.SetBlockSize(s.blockCap)
	srv.SetBlockSizeNegotiation(false)
	srv.SetTimeout(s.timeout)
	// pin/tftp sends a datagram 1+retries times; Config.Retries counts sends.
	srv.SetRetries(max(s.retries-1, 1))
	srv.SetBackoff(func(int) time.Duration { return 0 })
	srv.EnableSinglePort()
	return srv
}

// pinServes says whether pin/tftp's sender serves req: lock-step (no
// windowsize of 2 or more) with a block size it negotiates as we do. It
// refuses blksize below 512 and the client would get 512-byte blocks, so
// those go to our sender, as do windowed requests (pin/tftp has no RFC 7440).
func pinServes(req request) bool {
	if req.windowSize() >= 2 {
		return false
	}
	n, ok := req.blockSize()
	return !ok || n >= defaultBlockSize
}

// key is a client's address as pin/tftp names it (its hook knows no zone).
func pinKey(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap().WithZone(""), a.Port())
}

// ReadFrom implements net.PacketConn for pin/tftp's Serve loop: it reads the
// socket until a datagram is for pin/tftp, and answers or dispatches the
// others itself.
func (pp *pinPort) ReadFrom(b []byte) (int, net.Addr, error) {
	pp.mu.Lock()
	pp.inflight = netip.AddrPort{}
	pp.moved.Broadcast()
	for {
		for len(pp.fakes) > 0 {
			k := pp.fakes[0]
			pp.fakes = pp.fakes[1:]
			if t := pp.xfers[k]; t != nil && !t.closing {
				pp.inflight = k
				pp.mu.Unlock()
				return copy(b, forgedError), udpAddr(k), nil
			}
		}
		if pp.shut && len(pp.xfers) == 0 {
			pp.mu.Unlock()
			return 0, nil, net.ErrClosed
		}
		if pp.portErr != nil {
			// Serve is told (failed) and stops; until its transfers are gone, only
			// forged ERRORs are handed out (pin/tftp's loop would spin on errors).
			pp.moved.Wait()
			continue
		}
		if pp.kicked {
			pp.kicked = false
			pp.p.conn.SetReadDeadline(pp.deadline)
		}
		pp.mu.Unlock()

		n, oobn, _, from, err := pp.p.conn.ReadMsgUDP(pp.p.buf, pp.p.oob)
		if err != nil {
			if err := pp.readFailed(err); err != nil {
				return 0, nil, err
			}
			pp.mu.Lock()
			continue
		}
		remote := netip.AddrPortFrom(from.AddrPort().Addr().Unmap(), from.AddrPort().Port())
		if k, pkt := pp.route(pp.p.buf[:n], remote, pp.p.oob[:oobn]); pkt != nil {
			pp.mu.Lock()
			if t := pp.xfers[k]; t != nil && !t.closing {
				pp.inflight = k
				pp.mu.Unlock()
				return copy(b, pkt), udpAddr(k), nil
			}
			continue
		}
		pp.mu.Lock()
	}
}

// forgedError is the ERROR (code 0) handed to pin/tftp's sender as if from
// a client, to end its transfer (cut): it takes any ERROR for the end.
const forgedError = "\x00\x05\x00\x00transfer cut by the server\x00"

// readFailed handles a failed read of the socket: nil to read again, or the
// error for pin/tftp's loop.
func (pp *pinPort) readFailed(err error) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		// A kick, or pin/tftp's own deadline (it sets one only when shutting down).
		if !pp.kicked && pp.shut {
			return err
		}
		return nil
	case errors.Is(err, net.ErrClosed):
		if pp.shut {
			return err
		}
		if pp.portErr == nil {
			pp.portErr = err
			close(pp.failed)
		}
		return nil
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		// IP_RECVERR: an ICMP error for something this port sent; the error queue
		// says to whom.
		pp.drainErrors()
		return nil
	}
	// A read that fails and leaves the socket open has lost a datagram at most.
	pp.s.m.badRequests.Inc()
	pp.s.log.Debug("tftp read failed", zap.Error(err))
	return nil
}

// drainErrors reads the socket's error queue (IP_RECVERR) and cuts the
// transfers whose client's port is unreachable. Called with mu held.
func (pp *pinPort) drainErrors() {
	rc, err := pp.p.conn.SyscallConn()
	if err != nil {
		return
	}
	buf, oob := make([]byte, 64), make([]byte, 512)
	rc.Read(func(fd uintptr) bool {
		for range 1024 { // bounded: the queue is bounded by the receive buffer anyway
			_, _, _, sa, err := unix.Recvmsg(int(fd), buf, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
			if err != nil {
				break
			}
			var to netip.AddrPort
			switch sa := sa.(type) {
			case *unix.SockaddrInet4:
				to = netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
			case *unix.SockaddrInet6:
				to = netip.AddrPortFrom(netip.AddrFrom16(sa.Addr), uint16(sa.Port))
			default:
				continue
			}
			if t := pp.xfers[pinKey(to)]; t != nil {
				pp.cutLocked(t, fmt.Errorf("%w (ICMP unreachable after block %d)", errGone, t.acked))
			}
		}
		return true
	})
}

// route handles datagram b from remote to the address in oob: it returns
// the transfer's key and the datagram to hand pin/tftp, when there is one
// (an admitted lock-step request, an ACK or ERROR of a running transfer).
func (pp *pinPort) route(b []byte, remote netip.AddrPort, oob []byte) (netip.AddrPort, []byte) {
	s := pp.s
	k := pinKey(remote)
	op := -1
	if len(b) >= 2 {
		op = int(b[0])<<8 | int(b[1])
	}
	pp.mu.Lock()
	t := pp.xfers[k]
	if t != nil {
		return k, pp.routeRunning(t, op, b, remote) // unlocks
	}
	pp.mu.Unlock()
	if op != opRRQ {
		s.dispatch(pp.p, b, remote, oob)
		return k, nil
	}
	req, err := parseRRQ(b)
	if err != nil || !pinServes(req) {
		s.dispatch(pp.p, b, remote, oob)
		return k, nil
	}
	return k, pp.admit(k, req, remote, oob)
}

// routeRunning handles datagram b of a running transfer t's client, with pp.mu held (it
// unlocks): ACKs and ERRORs go on to pin/tftp, anything else stops here.
func (pp *pinPort) routeRunning(t *pinTransfer, op int, b []byte, remote netip.AddrPort) []byte {
	switch {
	case t.closing:
	case op == opACK && len(b) >= 4:
		return pp.routeACK(t, int(b[2])<<8|int(b[3]), b) // unlocks
	case op == opERROR && len(b) >= 5: // shorter, pin/tftp ignores it
		msg := b[4:]
		if i := indexNUL(msg); i >= 0 {
			msg = msg[:i]
		}
		if t.peerErr == nil {
			t.peerErr = &peerError{block: t.acked, code: uint16(b[2])<<8 | uint16(b[3]), msg: string(msg)}
		}
		pp.mu.Unlock()
		return b
	case op == opRRQ:
		pp.mu.Unlock()
		pp.s.m.repeated.Inc()
		pp.s.logRequest(zap.DebugLevel, "tftp request repeated while its transfer runs; ignored", pp.s.requestLog(remote, "", nil))
		return nil
	}
	pp.mu.Unlock()
	return nil // DATA, OACK or garbage from a client in a transfer: nothing to do with it
}

// routeACK handles an ACK of block blk (b) from running transfer t's client, with pp.mu held (it
// unlocks), and returns what to hand pin/tftp: the first ACK of the block it waits for, nothing
// else. pin/tftp's sender starts its whole timeout again for every datagram it is handed, so a
// client repeating a stale ACK (it lost a block) faster than that timeout would never see the
// block again. A duplicate ACK sends nothing (RFC 1123, 4.2.3.1: the Sorcerer's Apprentice).
func (pp *pinPort) routeACK(t *pinTransfer, blk int, b []byte) []byte {
	if blk != t.lastBlock || t.ackedLast {
		pp.mu.Unlock()
		return nil
	}
	if t.dataSent {
		t.acked++
	}
	t.ackedLast = true
	pp.mu.Unlock()
	return b
}

// admit starts lock-step transfer k of req from remote when the server's checks let it, and
// returns the request as pin/tftp is to see it (nil: refused, answered here).
func (pp *pinPort) admit(k netip.AddrPort, req request, remote netip.AddrPort, oob []byte) []byte {
	s := pp.s
	select {
	case <-s.stopping:
		return nil
	default:
	}
	if !s.claimPeer(remote) { // a windowed transfer of ours runs to that port
		s.m.repeated.Inc()
		s.logRequest(zap.DebugLevel, "tftp request repeated while its transfer runs; ignored", s.requestLog(remote, req.filename, &req))
		return nil
	}
	rl := s.requestLog(remote, req.filename, &req)
	unknown, err := s.acquire(remote.Addr())
	if err != nil {
		s.releasePeer(remote)
		s.refused(rl, err)
		pp.p.conn.WriteToUDPAddrPort(errorPacket(refusalCode(err), err.Error()), remote)
		return nil
	}
	t := &pinTransfer{remote: remote, local: pp.p.local(oob), req: req, rl: rl, unknown: unknown,
		until: time.Now().Add(s.maxTransferTime), done: make(chan struct{}), lastBlock: -1}
	pp.mu.Lock()
	pp.xfers[k] = t
	pp.mu.Unlock()
	// pin/tftp sees the request as it would serve it: the options it
	// negotiates only, so that what it answers is what ours would.
	opts := []string{}
	for _, o := range []string{"blksize", "tsize"} {
		if v, ok := req.opts[o]; ok {
			opts = append(opts, o, v)
		}
	}
	return rrqPacket(req.filename, req.mode, opts)
}

// rrqPacket is a read request datagram.
func rrqPacket(name, mode string, opts []string) []byte {
	p := append([]byte{0, opRRQ}, name...)
	p = append(append(p, 0), mode...)
	p = append(p, 0)
	for _, o := range opts {
		p = append(append(p, o...), 0)
	}
	return p
}

func udpAddr(a netip.AddrPort) *net.UDPAddr { return net.UDPAddrFromAddrPort(a) }

// WriteTo implements net.PacketConn: pin/tftp's sender sends every datagram
// of its transfers here. It counts resends, answers from the address the
// request came to, and keeps ERRORs from clients that sent one or are gone.
func (pp *pinPort) WriteTo(b []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("tftpd: pin/tftp wrote to %v, not a UDP address", addr)
	}
	k := pinKey(ua.AddrPort())
	pp.mu.Lock()
	t := pp.xfers[k]
	if t == nil {
		pp.mu.Unlock()
		return len(b), nil // no transfer of ours: nothing goes out unchecked
	}
	b, send := t.outgoing(b)
	if !send {
		pp.mu.Unlock()
		return len(b), nil
	}
	remote, local := t.remote, t.local
	pp.mu.Unlock()
	oob := pktinfo(local)
	n, _, err := pp.p.conn.WriteMsgUDPAddrPort(b, oob, remote)
	return n, err
}

// outgoing is what of datagram b, which pin/tftp's sender writes in transfer t, goes to the client
// (send false: nothing), and counts its resends; pinPort.mu is held.
func (t *pinTransfer) outgoing(b []byte) (_ []byte, send bool) {
	op := -1
	if len(b) >= 4 {
		op = int(b[0])<<8 | int(b[1])
	}
	switch {
	case t.refusal != nil:
		// The file could not be served: the client is told why, once, and
		// nothing else (pin/tftp may have an OACK to send first).
		if t.told {
			return b, false
		}
		b = errorPacket(refusalCode(t.refusal), t.refusal.Error())
		t.told = true
	case op == opERROR:
		if t.told || t.peerErr != nil || (t.cut != nil && !sendFailure(t.cut)) {
			return b, false
		}
		if t.cut != nil {
			b = errorPacket(errCodeUndefined, t.cut.Error())
		}
		t.told = true
	case op == opDATA:
		blk := int(b[2])<<8 | int(b[3])
		if blk == t.lastBlock && t.dataSent {
			t.retrans++
		} else {
			t.ackedLast = false
		}
		t.lastBlock, t.dataSent = blk, true
	case op == opOACK:
		if t.oackSent {
			t.retrans++
		}
		t.oackSent = true
		t.lastBlock = 0
		b = canonicalOACK(b)
	}
	return b, true
}

// pktinfo is the control message that sends a datagram from local ("" when local is unset).
func pktinfo(local netip.Addr) []byte {
	switch {
	case !local.IsValid():
	case local.Is4(): // IP_PKTINFO: also on a dual-stack socket, for a v4-mapped client
		return (&ipv4.ControlMessage{Src: local.AsSlice()}).Marshal()
	case local.Is6():
		return (&ipv6.ControlMessage{Src: local.AsSlice()}).Marshal()
	}
	return nil
}

// canonicalOACK puts the options of OACK b in the order our sender writes
// them (negotiate: blksize, then tsize): pin/tftp writes them in Go's map
// order, which changes from run to run. b is returned as it is when it does
// not parse.
func canonicalOACK(b []byte) []byte {
	if len(b) < 2 || b[len(b)-1] != 0 {
		return b
	}
	fields := bytes.Split(b[2:len(b)-1], []byte{0})
	if len(fields)%2 != 0 {
		return b
	}
	opts := map[string]string{}
	for i := 0; i < len(fields); i += 2 {
		opts[strings.ToLower(string(fields[i]))] = string(fields[i+1])
	}
	var out []string
	for _, name := range []string{"blksize", "tsize"} {
		if v, ok := opts[name]; ok {
			out = append(out, name, v)
			delete(opts, name)
		}
	}
	if len(opts) > 0 { // an option pin/tftp granted that we did not hand it: leave it be
		return b
	}
	return oackPacket(out)
}

// cut ends t: pin/tftp's sender is handed a forged ERROR from its client
// (again every waitSlice until it ends, in case its queue was full), and t's
// reader fails at the next block. reason is the transfer's error.
func (pp *pinPort) cut(t *pinTransfer, reason error) {
	pp.mu.Lock()
	pp.cutLocked(t, reason)
	pp.mu.Unlock()
}

func (pp *pinPort) cutLocked(t *pinTransfer, reason error) {
	if t.cut == nil {
		t.cut = reason
	}
	if t.closing {
		return
	}
	pp.fakes = append(pp.fakes, pinKey(t.remote))
	pp.kickLocked()
	pp.moved.Broadcast()
}

// kickLocked wakes ReadFrom from its read.
func (pp *pinPort) kickLocked() {
	pp.kicked = true
	pp.p.conn.SetReadDeadline(time.Unix(1, 0))
}

// watch cuts t when the server stops or t runs past MaxTransferTime, then
// again every waitSlice until it ends. A client that acknowledges is cut at
// its next block by the reader; this is for the silent ones.
func (pp *pinPort) watch(t *pinTransfer) {
	limit := time.NewTimer(time.Until(t.until))
	defer limit.Stop()
	var reason error
	select {
	case <-t.done:
		return
	case <-pp.s.stopping:
		reason = errStopping
	case <-limit.C:
		reason = fmt.Errorf("transfer ran past its limit of %v: %w", pp.s.maxTransferTime, errDeadline)
	}
	tick := time.NewTicker(waitSlice)
	defer tick.Stop()
	for {
		pp.cut(t, reason)
		select {
		case <-t.done:
			return
		case <-tick.C:
		}
	}
}

// waitSlice is how often a cut transfer is handed its forged ERROR again.
const waitSlice = 200 * time.Millisecond

// errDeadline is a transfer's limit passing: a timeout (classify).
var errDeadline = timeoutError{}

type timeoutError struct{}

func (timeoutError) Error() string   { return "deadline exceeded" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// pinHook is told by pin/tftp's sender when a transfer ends, just before it
// closes the transfer's channel: from then on no datagram is handed to it,
// and it returns only once pin/tftp's loop is done with the last one (the
// loop's send to a closed channel would panic the server).
type pinHook struct{ pp *pinPort }

func (h pinHook) OnSuccess(st tftp.TransferStats)          { h.pp.closing(st) }
func (h pinHook) OnFailure(st tftp.TransferStats, _ error) { h.pp.closing(st) }

func (pp *pinPort) closing(st tftp.TransferStats) {
	a, ok := netip.AddrFromSlice(st.RemoteAddr)
	if !ok {
		return // a request pin/tftp could not start; none of ours
	}
	k := netip.AddrPortFrom(a.Unmap(), uint16(st.Tid))
	pp.mu.Lock()
	defer pp.mu.Unlock()
	t := pp.xfers[k]
	if t == nil {
		return
	}
	t.closing = true
	for pp.inflight == k {
		pp.moved.Wait()
	}
}

// serve is pin/tftp's read handler: our file resolution, opening,
// observer and metrics around pin/tftp's sender (rf), for a request route
// admitted. It returns nil always, so that pin/tftp has closed the
// transfer when it returns (an error would be answered after).
func (pp *pinPort) serve(_ string, rf io.ReaderFrom) error {
	s := pp.s
	ot, ok := rf.(tftp.OutgoingTransfer)
	if !ok {
		return errors.New("tftpd: pin/tftp's transfer has no remote address")
	}
	ra := ot.RemoteAddr()
	k := pinKey(ra.AddrPort())
	pp.mu.Lock()
	t := pp.xfers[k]
	pp.mu.Unlock()
	if t == nil {
		return errors.New("tftpd: no admitted request for this transfer")
	}
	defer pp.remove(k, t)
	defer s.releasePeer(t.remote)
	defer close(t.done)
	go pp.watch(t)

	refusal := s.serveAdmitted(t.rl, t.unknown, func(r io.Reader, size int64) (sendStats, error) {
		if t.req.mode == "octet" {
			// pin/tftp converts netascii itself, and must not announce the file's size then.
			ot.SetSize(size)
		}
		err := pp.result(t, func() (int64, error) { return rf.ReadFrom(&pinReader{r: r, pp: pp, t: t}) })
		pp.mu.Lock()
		st := sendStats{blockSize: negotiate(t.req, -1, s.blockCap, 0).blockSize, retransmissions: t.retrans}
		pp.mu.Unlock()
		return st, err
	})
	if refusal != nil {
		pp.mu.Lock()
		t.refusal = refusal
		pp.mu.Unlock()
		pp.cut(t, refusal)
		rf.ReadFrom(&pinReader{r: eofReader{}, pp: pp, t: t})
	}
	return nil
}

// result runs pin/tftp's sender and names how it ended: why the server cut
// it, the client's ERROR, or the sender's own error.
func (pp *pinPort) result(t *pinTransfer, send func() (int64, error)) error {
	_, err := send()
	if err == nil {
		return nil
	}
	pp.mu.Lock()
	defer pp.mu.Unlock()
	switch {
	case t.cut != nil:
		return t.cut
	case t.peerErr != nil:
		return t.peerErr
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("no ACK in %d tries of %v: %w", max(pp.s.retries, 2), pp.s.timeout, err)
	}
	return err
}

func (pp *pinPort) remove(k netip.AddrPort, t *pinTransfer) {
	pp.mu.Lock()
	if pp.xfers[k] == t {
		delete(pp.xfers, k)
	}
	if pp.shut {
		pp.kickLocked() // ReadFrom ends pin/tftp's loop once no transfer is left
		pp.moved.Broadcast()
	}
	pp.mu.Unlock()
}

// pinReader is the file as pin/tftp's sender reads it: it fails at the
// next block once the transfer is cut or past its limit.
type pinReader struct {
	r  io.Reader
	pp *pinPort
	t  *pinTransfer
}

func (r *pinReader) Read(b []byte) (int, error) {
	r.pp.mu.Lock()
	cut := r.t.cut
	r.pp.mu.Unlock()
	if cut != nil {
		return 0, cut
	}
	if !time.Now().Before(r.t.until) {
		err := fmt.Errorf("transfer ran past its limit of %v: %w", r.pp.s.maxTransferTime, errDeadline)
		r.pp.cut(r.t, err)
		return 0, err
	}
	return r.r.Read(b)
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// shutdown lets ReadFrom fail: Serve is stopping.
func (pp *pinPort) shutdown() {
	pp.mu.Lock()
	pp.shut = true
	pp.moved.Broadcast()
	pp.kickLocked()
	pp.mu.Unlock()
}

// failure is the error the socket failed with under ReadFrom, if it did.
func (pp *pinPort) failure() error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	return pp.portErr
}

// Close implements net.PacketConn; Serve closes the socket.
func (pp *pinPort) Close() error { return nil }

// LocalAddr implements net.PacketConn, without an IPv6 zone (pin/tftp
// parses the host).
func (pp *pinPort) LocalAddr() net.Addr {
	ua, ok := pp.p.conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return pp.p.conn.LocalAddr()
	}
	return &net.UDPAddr{IP: ua.IP, Port: ua.Port}
}

// SetReadDeadline implements net.PacketConn; pin/tftp sets one when it
// shuts down.
func (pp *pinPort) SetReadDeadline(d time.Time) error {
	pp.mu.Lock()
	defer pp.mu.Unlock()
	pp.deadline = d
	if !pp.kicked {
		return pp.p.conn.SetReadDeadline(d)
	}
	return nil
}

// SetDeadline implements net.PacketConn.
func (pp *pinPort) SetDeadline(d time.Time) error { return pp.SetReadDeadline(d) }

// SetWriteDeadline implements net.PacketConn; writes are not bounded.
func (pp *pinPort) SetWriteDeadline(time.Time) error { return nil }
