package tftpd

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// rawFetchLockStep receives a file lock-step after an OACK (or from DATA 1
// when first is DATA), acknowledging every block; dupAt makes it send the
// ACK of that block twice, as a client whose ACK the server seemed to miss.
func rawFetchLockStep(t *testing.T, rc *rawClient, first []byte, blksize int, dupAt uint16) []byte {
	t.Helper()
	ack := func(b uint16) { rc.send(t, []byte{0, 4, byte(b >> 8), byte(b)}) }
	p := first
	if binary.BigEndian.Uint16(p) == opOACK {
		ack(0)
		p = rc.read(t)
	}
	var out []byte
	for want := uint16(1); ; want++ {
		if binary.BigEndian.Uint16(p) != opDATA || binary.BigEndian.Uint16(p[2:]) != want {
			t.Fatalf("want DATA %d, got % x", want, p[:min(len(p), 4)])
		}
		out = append(out, p[4:]...)
		ack(want)
		if want == dupAt {
			ack(want)
		}
		if len(p)-4 < blksize {
			return out
		}
		p = rc.read(t)
	}
}

// TestLockStepDuplicateACK: a duplicate ACK is not answered with a resend
// (Sorcerer's Apprentice): every block arrives exactly once.
func TestLockStepDuplicateACK(t *testing.T) {
	data := testfix.RandomBytes(20*512+11, 41)
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 2 * time.Second})
	rc, first := rawRRQ(t, ts.addr, "f")
	got := rawFetchLockStep(t, rc, first, 512, 5) // rawFetchLockStep fails on a block out of order
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	rc.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := rc.c.ReadFromUDP(rc.buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("server sent % x after the last ACK", rc.buf[:min(n, 4)])
	}
	if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.Retransmissions != 0 || res.WindowSize != 1 {
		t.Fatalf("result %+v, want ok, no retransmission, windowsize 1", res)
	}
}

// TestLockStepRollover: block numbers wrap at 65536 (66,000 blocks of 8).
func TestLockStepRollover(t *testing.T) {
	data := testfix.RandomBytes(66_000*8+3, 42)
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}})
	rc, first := rawRRQ(t, ts.addr, "f", "blksize", "8")
	got := rawFetchLockStep(t, rc, first, 8, 0)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("fetched %d bytes, want the %d-byte file", len(got), len(data))
	}
}

// TestLockStepThroughPoller: with every lock-step thread taken, a
// lock-step transfer runs in the windowed sender with a window of one.
func TestLockStepThroughPoller(t *testing.T) {
	data := testfix.RandomBytes(100_000, 43)
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}})
	for range cap(ts.srv.threads) { // no thread free
		ts.srv.threads <- struct{}{}
	}
	got, _, err := fetch(ts.addr, "f", 1468, true)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched %d bytes (%v), want the %d-byte file", len(got), err, len(data))
	}
	if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.WindowSize != 1 || res.BlockSize != 1468 {
		t.Fatalf("result %+v", res)
	}
}

// TestLockStepIPv6: the lock-step sender's own socket works over IPv6.
func TestLockStepIPv6(t *testing.T) {
	if c, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback}); err != nil {
		testenv.Skip(t, "no IPv6 loopback: %v", err)
	} else {
		c.Close()
	}
	data := testfix.RandomBytes(300_000, 44)
	ts := startServerOn(t, Config{Root: fstest.MapFS{"f": {Data: data}}}, "[::1]:0")
	got, _, err := fetch(ts.addr, "f", 1468, true)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetched %d bytes (%v), want the %d-byte file", len(got), err, len(data))
	}
	if res := ts.rec.next(t); res.Outcome != OutcomeOK || !res.Remote.Addr().Is6() {
		t.Fatalf("result %+v", res)
	}
}
