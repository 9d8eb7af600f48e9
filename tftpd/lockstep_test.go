package tftpd

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// rawFetchLockStep receives a file lock-step after an OACK (or from DATA 1
// when first is DATA), acknowledging every block; dupAt makes it send the
// ACK of that block twice, as a client whose ACK the server seemed to miss
// (-1: never). Like a real client it sends its last ACK again after 2 s of
// silence, up to 8 times (a lock-step sender answers only its own timeout): a storm beside this run overflows the kernel's
// backlog, which drops loopback datagrams too (ci26 lost one DATA of 66,000).
// A block again right after such a resend is skipped, any other block out of
// order fails the test. resent is how many ACKs went again for silence.
func rawFetchLockStep(t *testing.T, rc *rawClient, first []byte, blksize int, dupAt int) (data []byte, resent int) {
	t.Helper()
	var lastACK uint16
	ack := func(b uint16) { lastACK = b; rc.send(t, []byte{0, 4, byte(b >> 8), byte(b)}) }
	resentNow := false
	read := func() []byte {
		for try := 0; ; try++ {
			rc.c.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, from, err := rc.c.ReadFromUDP(rc.buf)
			if err == nil {
				rc.tid = from
				return bytes.Clone(rc.buf[:n])
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) || try == 8 {
				t.Fatalf("waiting for the server after ACK %d (sent %d more times): %v", lastACK, try, err)
			}
			ack(lastACK)
			resent++
			resentNow = true
		}
	}
	p := first
	if binary.BigEndian.Uint16(p) == opOACK {
		ack(0)
		p = read()
	}
	var out []byte
	for want := uint16(1); ; want++ {
		for resentNow && binary.BigEndian.Uint16(p) == opDATA && binary.BigEndian.Uint16(p[2:]) == want-1 {
			p = read() // the server's answer to our resent ACK
		}
		resentNow = false
		if binary.BigEndian.Uint16(p) != opDATA || binary.BigEndian.Uint16(p[2:]) != want {
			t.Fatalf("want DATA %d, got % x", want, p[:min(len(p), 4)])
		}
		out = append(out, p[4:]...)
		ack(want)
		if int(want) == dupAt {
			ack(want)
		}
		if len(p)-4 < blksize {
			return out, resent
		}
		p = read()
	}
}

// TestLockStepDuplicateACK: a duplicate ACK is not answered with a resend
// (Sorcerer's Apprentice): every block arrives exactly once.
func TestLockStepDuplicateACK(t *testing.T) {
	data := testfix.RandomBytes(20*512+11, 41)
	// The server's timeout is longer than the client's 2 s, so only a resent ACK brings a block again.
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 10 * time.Second})
	rc, first := rawRRQ(t, ts.addr, "f")
	got, resent := rawFetchLockStep(t, rc, first, 512, 5) // rawFetchLockStep fails on a block out of order
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	rc.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := rc.c.ReadFromUDP(rc.buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("server sent % x after the last ACK", rc.buf[:min(n, 4)])
	}
	// A block goes again only for an ACK the client sent again after a loss.
	if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.Retransmissions > resent || res.WindowSize != 1 {
		t.Fatalf("result %+v (client resent %d ACKs), want ok, no retransmission, windowsize 1", res, resent)
	}
}

// TestLockStepRollover: block numbers wrap at 65536 (66,000 blocks of 8:
// our sender, with a window of one, as pin/tftp grants no block below 512).
func TestLockStepRollover(t *testing.T) {
	data := testfix.RandomBytes(66_000*8+3, 42)
	// 10 s for each ACK: the test counts blocks, not time, and under -race on a loaded host one
	// of its 66,000 ACKs came after the default 3 s, so a retransmission broke the order (ci16).
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 10 * time.Second})
	rc, first := rawRRQ(t, ts.addr, "f", "blksize", "8")
	got, _ := rawFetchLockStep(t, rc, first, 8, -1)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("fetched %d bytes, want the %d-byte file", len(got), len(data))
	}
}

// TestPinLockStep: lock-step transfers go through pin/tftp's sender behind
// pinPort, with our options, our observer, and a client that goes away
// (ICMP port unreachable, or an ERROR) or a server that stops ends them at
// once.
func TestPinLockStep(t *testing.T) {
	data := testfix.RandomBytes(100_000, 43)
	root := fstest.MapFS{"f": {Data: data}}
	t.Run("fetch", func(t *testing.T) {
		ts := startServer(t, Config{Root: root})
		got, size, err := fetch(ts.addr, "f", 1468, true)
		if err != nil || !bytes.Equal(got, data) || size != int64(len(data)) {
			t.Fatalf("fetched %d bytes, tsize %d (%v), want the %d-byte file", len(got), size, err, len(data))
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.WindowSize != 1 || res.BlockSize != 1468 || res.Bytes != int64(len(data)) {
			t.Fatalf("result %+v", res)
		}
	})
	t.Run("duplicate ACK", func(t *testing.T) {
		ts := startServer(t, Config{Root: root, Timeout: 10 * time.Second})
		rc, first := rawRRQ(t, ts.addr, "f")
		got, resent := rawFetchLockStep(t, rc, first, 512, 7)
		if !bytes.Equal(got, data) {
			t.Fatalf("got %d bytes, want %d", len(got), len(data))
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.Retransmissions > resent {
			t.Fatalf("result %+v (client resent %d ACKs), want ok, no retransmission", res, resent)
		}
	})
	t.Run("lost DATA", func(t *testing.T) {
		// A client that lost a block repeats its ACK of the block before, faster than the
		// server's 2 s timeout: the block goes again when that timeout passes, once.
		ts := startServer(t, Config{Root: root, Timeout: 2 * time.Second, Retries: 5})
		rc, p := rawRRQ(t, ts.addr, "f")
		ack := func(b uint16) { rc.send(t, []byte{0, 4, byte(b >> 8), byte(b)}) }
		block := func(p []byte) uint16 {
			if binary.BigEndian.Uint16(p) != opDATA {
				t.Fatalf("want DATA, got % x", p[:min(len(p), 4)])
			}
			return binary.BigEndian.Uint16(p[2:])
		}
		out := append([]byte(nil), p[4:]...)
		ack(block(p))
		rc.read(t) // DATA 2, lost
		start := time.Now()
		for p = nil; p == nil && time.Since(start) < 8*time.Second; {
			ack(1)
			rc.c.SetReadDeadline(time.Now().Add(400 * time.Millisecond))
			if n, from, err := rc.c.ReadFromUDP(rc.buf); err == nil {
				p, rc.tid = bytes.Clone(rc.buf[:n]), from
			}
		}
		if p == nil || block(p) != 2 {
			t.Fatalf("no DATA 2 again in %v of repeated ACKs of block 1", time.Since(start))
		}
		for {
			out = append(out, p[4:]...)
			ack(block(p))
			if len(p)-4 < 512 {
				break
			}
			p = rc.read(t)
		}
		if !bytes.Equal(out, data) {
			t.Fatalf("got %d bytes, want the %d-byte file", len(out), len(data))
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.Retransmissions != 1 {
			t.Fatalf("result %+v, want ok, one retransmission", res)
		}
	})
	t.Run("client gone", func(t *testing.T) {
		gate := make(chan struct{})
		ts := startServer(t, Config{Root: gatedFS{root, gate}, Timeout: 3 * time.Second, Retries: 5})
		// As in TestAttackClientGone: the OACK meets a closed port.
		rc := sendRRQ(t, ts.addr, "127.0.0.1", "octet", "f", "blksize", "1468")
		waitActive(t, ts.srv, 1, time.Second)
		rc.c.Close()
		close(gate)
		waitActive(t, ts.srv, 0, 2*time.Second) // well before the 3 s timeout
		if res := ts.rec.next(t); res.Outcome != OutcomeAborted || !errors.Is(res.Err, errGone) {
			t.Errorf("outcome %s (%v), want aborted: client went away", res.Outcome, res.Err)
		}
	})
	t.Run("shutdown", func(t *testing.T) {
		ts := startServer(t, Config{Root: root, Timeout: 30 * time.Second, Retries: 5})
		rc, first := rawRRQ(t, ts.addr, "f")
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
		// The client is told: an ERROR, not silence until its own timeout.
		if p := rc.read(t); binary.BigEndian.Uint16(p) != opERROR || !bytes.Contains(p, []byte("shutting down")) {
			t.Errorf("client got % x, want an ERROR saying the server is shutting down", p[:min(len(p), 4)])
		}
	})
}

// TestPinOACKOrder: pin/tftp writes its OACK in map order; the client
// gets it in one order every time (blksize, then tsize, as our sender).
func TestPinOACKOrder(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(3000, 48)}}})
	want := "\x00\x06blksize\x001468\x00tsize\x003000\x00"
	for i := range 20 {
		rc, first := rawRRQ(t, ts.addr, "f", "tsize", "0", "blksize", "1468")
		if string(first) != want {
			t.Fatalf("request %d: OACK %q, want %q", i, first, want)
		}
		rc.send(t, rawError(0, "enough"))
	}
}

// TestSenderChoice: pin/tftp's sender answers lock-step requests from the
// TFTP port itself (single-port mode); ours answers windowed requests and
// block sizes pin/tftp would not grant from a port of its own.
func TestSenderChoice(t *testing.T) {
	data := testfix.RandomBytes(5000, 46)
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}})
	srvPort := netip.MustParseAddrPort(ts.addr).Port()
	for _, tc := range []struct {
		name string
		opts []string
		pin  bool
	}{
		{"no options", nil, true},
		{"blksize 1468 tsize", []string{"blksize", "1468", "tsize", "0"}, true},
		{"windowsize 1", []string{"windowsize", "1"}, true},
		{"windowsize 4", []string{"windowsize", "4"}, false},
		{"blksize 256", []string{"blksize", "256"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc, _ := rawRRQ(t, ts.addr, "f", tc.opts...)
			if fromPin := rc.tid.Port == int(srvPort); fromPin != tc.pin {
				t.Errorf("answered from port %d (server %d): pin/tftp = %v, want %v", rc.tid.Port, srvPort, fromPin, tc.pin)
			}
			rc.send(t, rawError(0, "enough"))
		})
	}
}

// TestLockStepIPv6: lock-step transfers (pin/tftp behind pinPort) work over
// IPv6.
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

// TestPinEndRace: clients that acknowledge the last block three times, and
// then send an ERROR, while their transfers end. pin/tftp's loop hands a
// datagram to a transfer's channel after looking it up without its lock;
// were one handed over as the transfer closed its channel, the send would
// panic the server (pinHook holds the close until the loop is done).
func TestPinEndRace(t *testing.T) {
	data := testfix.RandomBytes(600, 47) // two blocks of 512
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, MaxTransfersPerClient: 64, Timeout: 2 * time.Second})
	const clients, each = 8, 40
	errc := make(chan error, clients)
	for range clients {
		go func() {
			for range each {
				rc, first := rawRRQ(t, ts.addr, "f")
				if binary.BigEndian.Uint16(first) != opDATA {
					errc <- fmt.Errorf("want DATA 1, got % x", first[:4])
					return
				}
				rc.send(t, []byte{0, 4, 0, 1})
				last := rc.read(t)
				if len(last) != 4+88 || binary.BigEndian.Uint16(last[2:]) != 2 {
					errc <- fmt.Errorf("want DATA 2 of 88 bytes, got % x (%d bytes)", last[:4], len(last))
					return
				}
				for range 3 {
					rc.send(t, []byte{0, 4, 0, 2})
				}
				rc.send(t, rawError(0, "late"))
			}
			errc <- nil
		}()
	}
	for range clients {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	testfix.WaitFor(t, "every transfer reported", 20*time.Second, func() bool {
		ts.rec.mu.Lock()
		defer ts.rec.mu.Unlock()
		return len(ts.rec.dones) == clients*each
	})
	ts.rec.mu.Lock()
	for _, res := range ts.rec.dones {
		if res.Outcome != OutcomeOK {
			t.Errorf("result %+v, want ok", res)
		}
	}
	ts.rec.mu.Unlock()
	got, _, err := fetch(ts.addr, "f", 0, false)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch after the race: %d bytes, %v", len(got), err)
	}
}
