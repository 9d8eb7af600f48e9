package tftpd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// lockStepSender sends one file lock-step (RFC 1350: one DATA block, then
// its ACK) on a blocking socket of its own, connected to the client.
//
// Why not the windowed sender with a window of one: a lock-step transfer
// waits for an ACK after every block, and through Go's network poller each
// wait parks the goroutine and wakes it through epoll and the scheduler,
// which on loopback costs more than the round trip itself (about 15% of
// tftpd-hpa's rate, measured with bench/tftp/run.sh). Here the transfer's
// goroutine blocks in recv(2) like tftpd-hpa's process does: two system
// calls per block (send, recv), no poller, no timer per block. The socket
// is never registered with the poller, so the blocking is the thread's
// alone; Server bounds how many such threads run (lockStepThreads).
//
// recv waits in slices of at most waitSlice (SO_RCVTIMEO), so that a
// stopping server is noticed within one slice whatever the client asked.
type lockStepSender struct {
	fd       int // blocking UDP socket connected to the client
	p        params
	timeout  time.Duration
	retries  int
	stopping <-chan struct{}
	until    time.Time
	limit    time.Duration

	pkt     []byte // the block being sent: opcode, block number, data
	recv    []byte
	retrans int
}

// waitSlice bounds one blocking recv, hence how long Serve waits for a
// lock-step transfer to notice that the server stops.
const waitSlice = 200 * time.Millisecond

// lockStepThreads bounds the lock-step transfers that block a thread each;
// beyond it, lock-step transfers run in the windowed sender with a window
// of one, through the poller (serveTransfer chooses).
const lockStepThreads = 256

// dialBlocking opens a blocking UDP socket bound to local (the zero Addr:
// any) and connected to remote, outside Go's network poller. Connected, it
// receives only the client's TID and reports ICMP port unreachable from
// the client as ECONNREFUSED.
func dialBlocking(local netip.Addr, remote netip.AddrPort) (int, error) {
	family, raddr := unix.AF_INET, unix.Sockaddr(nil)
	if remote.Addr().Is4() {
		raddr = &unix.SockaddrInet4{Port: int(remote.Port()), Addr: remote.Addr().As4()}
	} else {
		family = unix.AF_INET6
		raddr = &unix.SockaddrInet6{Port: int(remote.Port()), Addr: remote.Addr().As16(), ZoneId: zoneID(remote.Addr().Zone())}
	}
	fd, err := unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.IPPROTO_UDP)
	if err != nil {
		return -1, os.NewSyscallError("socket", err)
	}
	fail := func(op string, err error) (int, error) {
		unix.Close(fd)
		return -1, os.NewSyscallError(op, err)
	}
	// Answer from the address the request came to, when it is of the
	// client's family (it always is, short of a v4-mapped oddity).
	var la unix.Sockaddr
	switch local = local.Unmap(); {
	case local.Is4() && family == unix.AF_INET:
		la = &unix.SockaddrInet4{Addr: local.As4()}
	case local.Is6() && family == unix.AF_INET6:
		la = &unix.SockaddrInet6{Addr: local.As16(), ZoneId: zoneID(remote.Addr().Zone())}
	}
	if la != nil {
		if err := unix.Bind(fd, la); err != nil {
			return fail("bind", err)
		}
	}
	if err := unix.Connect(fd, raddr); err != nil {
		return fail("connect", err)
	}
	return fd, nil
}

// zoneID is the interface index of an IPv6 zone (link-local addresses).
func zoneID(zone string) uint32 {
	if zone == "" {
		return 0
	}
	if ifi, err := net.InterfaceByName(zone); err == nil {
		return uint32(ifi.Index)
	}
	if n, err := strconv.Atoi(zone); err == nil && n > 0 {
		return uint32(n)
	}
	return 0
}

// run performs the transfer of r: OACK (when there is one), then the data.
func (l *lockStepSender) run(r io.Reader) error {
	l.recv = make([]byte, 4+512)
	tv := unix.NsecToTimeval(min(waitSlice, l.timeout).Nanoseconds())
	if err := unix.SetsockoptTimeval(l.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return os.NewSyscallError("setsockopt SO_RCVTIMEO", err)
	}
	if l.p.oack != nil {
		if err := l.exchange(l.p.oack, 0); err != nil {
			return fmt.Errorf("OACK: %w", err)
		}
	}
	l.pkt = make([]byte, 4+l.p.blockSize)
	binary.BigEndian.PutUint16(l.pkt, opDATA)
	for b := uint64(1); ; b++ {
		n, err := io.ReadFull(r, l.pkt[4:])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return err
		}
		binary.BigEndian.PutUint16(l.pkt[2:], uint16(b))
		if err := l.exchange(l.pkt[:4+n], b); err != nil {
			return fmt.Errorf("block %d: %w", b, err)
		}
		if n < l.p.blockSize {
			return nil
		}
	}
}

// exchange sends pkt until the client acknowledges block (0 for the
// OACK), sending it again after each timeout of silence.
func (l *lockStepSender) exchange(pkt []byte, block uint64) error {
	for tries := 1; ; tries++ {
		if !time.Now().Before(l.until) {
			return fmt.Errorf("transfer ran past its limit of %v: %w", l.limit, os.ErrDeadlineExceeded)
		}
		if _, err := unix.Write(l.fd, pkt); err != nil {
			return l.sysErr("send", block, err)
		}
		err := l.awaitACK(block, time.Now())
		if !errors.Is(err, errNoACK) {
			return err
		}
		if tries >= l.retries {
			return fmt.Errorf("no ACK in %d tries of %v: %w", tries, l.timeout, os.ErrDeadlineExceeded)
		}
		l.retrans++
	}
}

// errNoACK: the timeout (or the transfer's limit) passed without the ACK.
var errNoACK = errors.New("no ACK")

// awaitACK waits for the ACK of block, sent at sent. A duplicate ACK of
// the block before is ignored, not answered with a resend, so that
// duplicates cannot multiply (Sorcerer's Apprentice). An ERROR from the
// client ends the transfer; other datagrams are ignored.
func (l *lockStepSender) awaitACK(block uint64, sent time.Time) error {
	for {
		n, err := unix.Read(l.fd, l.recv)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN: // one waitSlice of silence
			select {
			case <-l.stopping:
				return errStopping
			default:
			}
			if now := time.Now(); now.Sub(sent) >= l.timeout || !now.Before(l.until) {
				return errNoACK
			}
			continue
		case err != nil:
			return l.sysErr("recv", block, err)
		case n < 4:
			continue
		}
		switch binary.BigEndian.Uint16(l.recv) {
		case opACK:
			if binary.BigEndian.Uint16(l.recv[2:]) == uint16(block) {
				return nil
			}
		case opERROR:
			msg := l.recv[4:n]
			if i := indexNUL(msg); i >= 0 {
				msg = msg[:i]
			}
			return &peerError{block: block - min(block, 1), code: binary.BigEndian.Uint16(l.recv[2:]), msg: string(msg)}
		}
	}
}

// sysErr names a failed send or recv; ECONNREFUSED (ICMP port unreachable)
// means the client has gone.
func (l *lockStepSender) sysErr(op string, block uint64, err error) error {
	if errors.Is(err, unix.ECONNREFUSED) {
		return fmt.Errorf("%w (%s after block %d): %w", errGone, op, block, err)
	}
	return os.NewSyscallError(op, err)
}
