package tftpd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"syscall"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// peerError is an ERROR packet from the client.
type peerError struct {
	block uint64 // the last block acknowledged when it came; 0: after the OACK
	code  uint16
	msg   string
}

func (e *peerError) Error() string {
	return fmt.Sprintf("client sent ERROR %d %q after block %d", e.code, e.msg, e.block)
}

// windowSender sends one file over RFC 7440 windows on a socket connected to
// the client: up to window blocks go out back to back, then one ACK moves
// the window to the block after the one it names. An ACK short of the
// window's end means the client lost the next block, so the window restarts
// there; silence for the timeout sends the window again.
type windowSender struct {
	conn     *net.UDPConn // connected to the client: other TIDs never reach it
	p        params
	timeout  time.Duration
	retries  int
	stopping <-chan struct{}
	until    time.Time     // the transfer's end at the latest (MaxTransferTime)
	limit    time.Duration // MaxTransferTime, for the error message

	batch   batchWriter // conn, sending a window in one system call
	msgs    []ipv4.Message
	ring    [][]byte // window slots, each opcode + block + data
	lens    []int    // bytes used in each slot
	recv    []byte
	retrans int
}

// errStopping ends a transfer when the server shuts down.
var errStopping = fmt.Errorf("%w while waiting for an ACK", errShutdown)

// windowState is where a windowed transfer stands, in block numbers
// widened to 64 bits.
type windowState struct {
	base   uint64 // first block not yet acknowledged
	filled uint64 // last block read into the ring
	last   uint64 // the final block, once read (0: not yet)
	// sendFrom is the first block of the window not sent yet: the window's
	// start after progress, past it when only read-ahead is new.
	sendFrom uint64
	// resentOnDup: the window was sent again for a duplicate ACK since the
	// last progress; it is not sent again for the next one.
	resentOnDup bool
}

// run performs the transfer of r: OACK (when there is one), then the data,
// a window at a time until the client acknowledges the final block.
func (w *windowSender) run(r io.Reader) error {
	w.recv = make([]byte, 4+512) // an ACK, or an ERROR with a message of up to 511 bytes
	if w.p.oack != nil {
		if err := w.sendOACK(); err != nil {
			return err
		}
	}
	w.ring = make([][]byte, w.p.windowSize)
	for i := range w.ring {
		w.ring[i] = make([]byte, 4+w.p.blockSize)
	}
	w.lens = make([]int, len(w.ring))
	st := windowState{base: 1, sendFrom: 1}
	for {
		if err := w.readAhead(r, &st); err != nil {
			return err
		}
		end := min(st.base+uint64(len(w.ring))-1, st.filled)
		if err := w.sendBlocks(st.sendFrom, end); err != nil {
			return err
		}
		done, err := w.awaitWindow(&st, end)
		if done || err != nil {
			return err
		}
	}
}

// readAhead reads blocks into the ring up to the end of the window; the
// ring slot of block b is b mod window, and blocks below base are no
// longer needed.
func (w *windowSender) readAhead(r io.Reader, st *windowState) error {
	win := uint64(len(w.ring))
	for st.last == 0 && st.filled < st.base+win-1 {
		b := st.filled + 1
		buf := w.ring[b%win]
		n, err := io.ReadFull(r, buf[4:])
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return err
		}
		binary.BigEndian.PutUint16(buf[0:], opDATA)
		binary.BigEndian.PutUint16(buf[2:], uint16(b))
		w.lens[b%win] = 4 + n
		st.filled = b
		if n < w.p.blockSize {
			st.last = b
		}
	}
	return nil
}

// awaitWindow waits for the ACK that moves the window sent (base..end) and
// moves it; done is true when the final block is acknowledged. Silence for
// the timeout sends the window again, up to the retries.
func (w *windowSender) awaitWindow(st *windowState, end uint64) (done bool, err error) {
	deadline := w.deadline()
	for tries := 1; ; {
		acked, err := w.awaitACK(deadline, st.base-1)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			if rerr := w.resendAfterTimeout(st.base, end, tries, err); rerr != nil {
				return false, rerr
			}
			tries++
			deadline = w.deadline()
			continue
		}
		if err != nil {
			return false, err
		}
		if acked > end {
			continue // acknowledges a block never sent: not from this transfer
		}
		if acked >= st.base {
			if acked == st.last {
				return true, nil
			}
			// The window restarts after the block acknowledged; blocks
			// after it that were already sent go again.
			w.retrans += int(end - acked)
			st.base, st.sendFrom, st.resentOnDup = acked+1, acked+1, false
			return false, nil
		}
		if err := w.resendOnDuplicate(st, end); err != nil {
			return false, err
		}
	}
}

// resendAfterTimeout sends blocks base..end again after try number tries
// timed out (timeout), unless the transfer has run past its limit or out of
// retries.
func (w *windowSender) resendAfterTimeout(base, end uint64, tries int, timeout error) error {
	if err := w.pastLimit(); err != nil {
		return err
	}
	if tries >= w.retries {
		return fmt.Errorf("no ACK after block %d in %d tries of %v: %w", base-1, tries, w.timeout, timeout)
	}
	w.retrans += int(end - base + 1)
	return w.sendBlocks(base, end)
}

// resendOnDuplicate handles an ACK that makes no progress: the client lost
// the window's first block, or this is a late duplicate. The window goes
// again once, not for every duplicate, or duplicates would multiply
// (Sorcerer's Apprentice).
func (w *windowSender) resendOnDuplicate(st *windowState, end uint64) error {
	if st.resentOnDup {
		return nil
	}
	st.resentOnDup = true
	w.retrans += int(end - st.base + 1)
	return w.sendBlocks(st.base, end)
}

// batchWriter is sendmmsg(2) on the transfer socket: ipv4.PacketConn and
// ipv6.PacketConn both have it, with the same Message type.
type batchWriter interface {
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func newBatchWriter(conn *net.UDPConn) batchWriter {
	if ra, ok := conn.RemoteAddr().(*net.UDPAddr); ok && ra.IP.To4() == nil {
		return ipv6.NewPacketConn(conn)
	}
	return ipv4.NewPacketConn(conn)
}

// sendBlocks sends blocks from..to (inclusive) from the ring, as many per
// system call as the kernel takes.
func (w *windowSender) sendBlocks(from, to uint64) error {
	if to < from {
		return nil
	}
	win := uint64(len(w.ring))
	if w.batch == nil {
		w.batch = newBatchWriter(w.conn)
		w.msgs = make([]ipv4.Message, len(w.ring))
		for i := range w.msgs {
			w.msgs[i].Buffers = make([][]byte, 1)
		}
	}
	ms := w.msgs[:to-from+1]
	for i := range ms {
		b := from + uint64(i)
		ms[i].Buffers[0] = w.ring[b%win][:w.lens[b%win]]
	}
	for len(ms) > 0 {
		n, err := w.batch.WriteBatch(ms, 0)
		if err != nil {
			return fmt.Errorf("sending blocks %d..%d: %w", from, to, err)
		}
		ms = ms[n:]
	}
	return nil
}

// sendOACK sends the OACK until the client acknowledges it with ACK 0.
func (w *windowSender) sendOACK() error {
	for tries := 1; ; tries++ {
		if _, err := w.conn.Write(w.p.oack); err != nil {
			return fmt.Errorf("sending OACK: %w", err)
		}
		acked, err := w.awaitACK(w.deadline(), 0)
		if err == nil && acked == 0 {
			return nil
		}
		if err == nil {
			continue // an ACK for data before any was sent: ignore it
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			return err
		}
		if err := w.pastLimit(); err != nil {
			return err
		}
		if tries >= w.retries {
			return fmt.Errorf("no ACK for the OACK in %d tries of %v: %w", tries, w.timeout, err)
		}
		w.retrans++
	}
}

// deadline is when to give up waiting for the next ACK: one timeout from
// now, or the transfer's limit if that comes first.
func (w *windowSender) deadline() time.Time {
	d := time.Now().Add(w.timeout)
	if !w.until.IsZero() && w.until.Before(d) {
		return w.until
	}
	return d
}

// pastLimit is the error ending a transfer that has run past its limit.
func (w *windowSender) pastLimit() error {
	if w.until.IsZero() || time.Now().Before(w.until) {
		return nil
	}
	return fmt.Errorf("transfer ran past its limit of %v: %w", w.limit, os.ErrDeadlineExceeded)
}

// awaitACK waits until deadline for an ACK and returns the block it names,
// widened to 64 bits next to prev (the last block acknowledged): block
// numbers wrap at 65536, and a window is far smaller than that. An ERROR
// from the client ends the transfer; other datagrams are ignored.
func (w *windowSender) awaitACK(deadline time.Time, prev uint64) (uint64, error) {
	if err := w.conn.SetReadDeadline(deadline); err != nil {
		return 0, err
	}
	for {
		select {
		case <-w.stopping:
			return 0, errStopping
		default:
		}
		n, err := w.conn.Read(w.recv)
		if err != nil {
			select {
			case <-w.stopping:
				return 0, errStopping // Serve cut the wait short
			default:
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				// ICMP port unreachable on the connected socket: the
				// client's port is closed, nobody will acknowledge.
				return 0, fmt.Errorf("%w after block %d: %w", errGone, prev, err)
			}
			return 0, err
		}
		if n < 4 {
			continue
		}
		switch binary.BigEndian.Uint16(w.recv) {
		case opACK:
			got := binary.BigEndian.Uint16(w.recv[2:])
			return prev + uint64(got-uint16(prev)), nil
		case opERROR:
			msg := w.recv[4:n]
			if i := indexNUL(msg); i >= 0 {
				msg = msg[:i]
			}
			return 0, &peerError{block: prev, code: binary.BigEndian.Uint16(w.recv[2:]), msg: string(msg)}
		}
	}
}

func indexNUL(b []byte) int {
	for i, c := range b {
		if c == 0 {
			return i
		}
	}
	return -1
}

// refusalCode is the TFTP error code for a request refused before transfer.
func refusalCode(err error) uint16 {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errNotFile):
		return errCodeNotFound
	case errors.Is(err, ErrBadPath), errors.Is(err, fs.ErrPermission):
		return errCodeAccess
	}
	return errCodeUndefined
}
