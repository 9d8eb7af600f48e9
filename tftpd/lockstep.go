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
// its ACK) on a socket of its own, connected to the client, waiting for
// each ACK in one of two ways:
//
//   - blocking: while the server runs no more transfers than it has Ps
//     (GOMAXPROCS), the goroutine blocks its thread in recv(2) like
//     tftpd-hpa's process does: two system calls per block, no poller, no
//     timer per block. Through Go's poller a lone transfer parks and wakes
//     its goroutine through epoll and the scheduler at every block, which
//     on loopback costs more than the round trip itself (pin/tftp's sender,
//     0.85x tftpd-hpa);
//   - through the poller: once the server runs more transfers than that.
//     A thread blocked in recv(2) keeps its P until sysmon takes it back,
//     after 20 µs or more: 64 such threads on one P (taskset -c 0) took
//     turns at that pace, 0.57-0.66x tftpd-hpa's aggregate for 64 clients. Through the poller
//     the P goes where an ACK has come, and one epoll_wait wakes many.
//
// A transfer starts blocking and moves to the poller, for good, at the
// first block it finds the server crowded (crowded); the socket stays the
// same, made non-blocking and handed to the poller as an *os.File.
//
// recv waits in slices of at most waitSlice (SO_RCVTIMEO, or a read
// deadline through the poller), so that a stopping server is noticed
// within one slice whatever the client asked.
type lockStepSender struct {
	fd       int      // UDP socket connected to the client; blocking until file is set
	file     *os.File // fd through the poller, once moved there (toPoller); nil before
	crowded  func() bool
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
		if l.file == nil && l.crowded != nil && l.crowded() {
			if err := l.toPoller(); err != nil {
				return err
			}
		}
		if err := l.write(pkt); err != nil {
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
		n, err := l.read(l.recv)
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

// toPoller moves the transfer's socket to Go's network poller: made
// non-blocking, os.NewFile registers it, and reads wait as a parked
// goroutine instead of a blocked thread.
func (l *lockStepSender) toPoller() error {
	if err := unix.SetNonblock(l.fd, true); err != nil {
		return os.NewSyscallError("set non-blocking", err)
	}
	l.file = os.NewFile(uintptr(l.fd), "tftp transfer")
	return nil
}

// write sends pkt as one datagram.
func (l *lockStepSender) write(pkt []byte) error {
	if l.file != nil {
		_, err := l.file.Write(pkt)
		return err
	}
	_, err := unix.Write(l.fd, pkt)
	return err
}

// read receives one datagram into b; EAGAIN is one waitSlice without any,
// whichever way the socket waits.
func (l *lockStepSender) read(b []byte) (int, error) {
	if l.file == nil {
		return unix.Read(l.fd, b)
	}
	if err := l.file.SetReadDeadline(time.Now().Add(min(waitSlice, l.timeout))); err != nil {
		return 0, err
	}
	n, err := l.file.Read(b)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return 0, unix.EAGAIN
	case errors.Is(err, io.EOF): // an empty datagram: *os.File reads it as the end
		return 0, nil
	}
	return n, err
}

// close closes the transfer's socket, however it waits.
func (l *lockStepSender) close() {
	if l.file != nil {
		l.file.Close()
		return
	}
	unix.Close(l.fd)
}
