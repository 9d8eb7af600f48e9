package tftpd

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
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

// throughPoller makes every lock-step transfer wait through the poller from
// its first block, as on a crowded server.
func throughPoller(s *Server) { s.blockingTransfers = 0 }

// TestLockStepThroughPoller: on a crowded server a lock-step transfer
// waits through the poller, still lock-step (window 1), with its options,
// and a client that goes away (ICMP port unreachable, or an ERROR) ends it
// at once.
func TestLockStepThroughPoller(t *testing.T) {
	data := testfix.RandomBytes(100_000, 43)
	root := fstest.MapFS{"f": {Data: data}}
	t.Run("fetch", func(t *testing.T) {
		ts := startServerWith(t, Config{Root: root}, "127.0.0.1:0", throughPoller)
		got, _, err := fetch(ts.addr, "f", 1468, true)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("fetched %d bytes (%v), want the %d-byte file", len(got), err, len(data))
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.WindowSize != 1 || res.BlockSize != 1468 {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("duplicate ACK", func(t *testing.T) {
		ts := startServerWith(t, Config{Root: root, Timeout: 2 * time.Second}, "127.0.0.1:0", throughPoller)
		rc, first := rawRRQ(t, ts.addr, "f")
		if got := rawFetchLockStep(t, rc, first, 512, 7); !bytes.Equal(got, data) {
			t.Fatalf("got %d bytes, want %d", len(got), len(data))
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.Retransmissions != 0 {
			t.Fatalf("result %+v, want ok, no retransmission", res)
		}
	})
	t.Run("client gone", func(t *testing.T) {
		gate := make(chan struct{})
		ts := startServerWith(t, Config{Root: gatedFS{root, gate}, Timeout: 3 * time.Second, Retries: 5}, "127.0.0.1:0", throughPoller)
		// As in TestAttackClientGone: the OACK meets a closed port.
		rc := sendRRQ(t, ts.addr, "127.0.0.1", "octet", "f", "blksize", "1468")
		waitActive(t, ts.srv, 1, time.Second)
		rc.c.Close()
		close(gate)
		waitActive(t, ts.srv, 0, time.Second) // well before the 3 s timeout
		if res := ts.rec.next(t); res.Outcome != OutcomeAborted {
			t.Errorf("outcome %s (%v), want aborted", res.Outcome, res.Err)
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		ts := startServerWith(t, Config{Root: root, Timeout: 30 * time.Second, Retries: 5}, "127.0.0.1:0", throughPoller)
		_, first := rawRRQ(t, ts.addr, "f")
		if binary.BigEndian.Uint16(first) != opDATA {
			t.Fatalf("want DATA 1, got % x", first[:4])
		}
		start := time.Now()
		ts.stop() // the transfer waits for ACK 1 with a 30 s timeout
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("Serve returned %v after cancel, want within a wait slice", d)
		}
		if res := ts.rec.next(t); !errors.Is(res.Err, errShutdown) {
			t.Errorf("result %s %v, want server shutting down", res.Outcome, res.Err)
		}
	})
}

// TestLockStepMovesToPoller: a transfer that started blocking moves its
// socket to the poller at the first block it finds the server crowded,
// and goes on to the end there.
func TestLockStepMovesToPoller(t *testing.T) {
	client, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	fd, err := dialBlocking(netip.Addr{}, client.LocalAddr().(*net.UDPAddr).AddrPort())
	if err != nil {
		t.Fatal(err)
	}
	var crowded atomic.Bool
	l := &lockStepSender{fd: fd, crowded: crowded.Load, p: params{blockSize: 512, windowSize: 1},
		timeout: 2 * time.Second, retries: 3, stopping: make(chan struct{}), until: time.Now().Add(time.Minute), limit: time.Minute}
	defer l.close()
	data := testfix.RandomBytes(40*512+100, 45)
	errc := make(chan error, 1)
	go func() { errc <- l.run(bytes.NewReader(data)) }()

	buf := make([]byte, 600)
	var got []byte
	for want := uint16(1); ; want++ {
		client.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, from, err := client.ReadFromUDP(buf)
		if err != nil {
			t.Fatalf("waiting for DATA %d: %v", want, err)
		}
		if binary.BigEndian.Uint16(buf) != opDATA || binary.BigEndian.Uint16(buf[2:]) != want {
			t.Fatalf("want DATA %d, got % x", want, buf[:4])
		}
		got = append(got, buf[4:n]...)
		if want == 10 {
			crowded.Store(true) // the server fills up: block 11 goes through the poller
		}
		if _, err := client.WriteToUDP([]byte{0, opACK, byte(want >> 8), byte(want)}, from); err != nil {
			t.Fatal(err)
		}
		if n-4 < 512 {
			break
		}
	}
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	if l.file == nil {
		t.Error("the transfer never moved to the poller")
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
