package tftpd

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io/fs"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// The tests in this file replay the attacks of a hostile host on the boot
// network (issue 13): each holds or wastes server resources the way the
// attack did, and checks that the server refuses or recovers.

// sendRRQ sends a read request in mode from a fresh socket bound to
// fromIP and returns the client without waiting for an answer.
func sendRRQ(t testing.TB, addr, fromIP, mode, name string, opts ...string) *rawClient {
	t.Helper()
	srv, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.ParseIP(fromIP)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pkt := []byte{0, 1}
	pkt = append(append(pkt, name...), 0)
	pkt = append(append(pkt, mode...), 0)
	for _, o := range opts {
		pkt = append(append(pkt, o...), 0)
	}
	if _, err := c.WriteToUDP(pkt, srv); err != nil {
		t.Fatal(err)
	}
	return &rawClient{c: c, buf: make([]byte, 65536)}
}

// waitActive waits up to d for the number of running transfers to be want.
func waitActive(t *testing.T, s *Server, want int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for s.Active() != want && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	if got := s.Active(); got != want {
		t.Fatalf("%d transfers running after %v, want %d", got, d, want)
	}
}

// TestAttackClientTimeout: a client asking for timeout 255 must not get it
// (it would hold a slot for 255 s per try); the OACK leaves it out when it
// is above the server's ceiling, and the transfer gives up on the server's
// own schedule.
func TestAttackClientTimeout(t *testing.T) {
	data := testfix.RandomBytes(100_000, 31)
	for _, window := range []string{"1", "4"} {
		t.Run("windowsize "+window, func(t *testing.T) {
			ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 100 * time.Millisecond, Retries: 2})
			rc, first := rawRRQ(t, ts.addr, "f", "blksize", "1468", "windowsize", window, "timeout", "255")
			if got := parseOACK(t, first)["timeout"]; got == "255" {
				t.Fatalf("OACK grants timeout 255")
			}
			rc.send(t, []byte{0, 4, 0, 0})
			start := time.Now()
			if res := ts.rec.next(t); res.Outcome != OutcomeTimeout {
				t.Fatalf("outcome %s (%v), want timeout", res.Outcome, res.Err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Fatalf("a silent client held its slot %v", d)
			}
		})
	}
	t.Run("within the ceiling", func(t *testing.T) {
		ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, MaxClientTimeout: 2 * time.Second})
		_, first := rawRRQ(t, ts.addr, "f", "windowsize", "4", "timeout", "2")
		if got := parseOACK(t, first)["timeout"]; got != "2" {
			t.Fatalf("OACK timeout %q, want 2 (within the ceiling)", got)
		}
	})
}

// TestAttackSlowClient: a client that acknowledges each block just before
// the server would resend keeps a transfer alive forever; MaxTransferTime
// ends it.
func TestAttackSlowClient(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(1_000_000, 32)}},
		Timeout: 300 * time.Millisecond, Retries: 2, MaxTransferTime: 700 * time.Millisecond})
	rc, first := rawRRQ(t, ts.addr, "f")
	if binary.BigEndian.Uint16(first) != opDATA {
		t.Fatalf("want DATA 1, got % x", first[:4])
	}
	stop := make(chan struct{})
	go func() {
		for b := uint16(1); ; b++ {
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
			rc.c.WriteToUDP([]byte{0, 4, byte(b >> 8), byte(b)}, rc.tid)
		}
	}()
	defer close(stop)
	start := time.Now()
	res := ts.rec.next(t)
	if d := time.Since(start); res.Outcome != OutcomeTimeout || d > 2*time.Second {
		t.Fatalf("outcome %s after %v (%v), want timeout within about 0.7 s", res.Outcome, d, res.Err)
	}
	if !strings.Contains(res.Err.Error(), "limit") {
		t.Errorf("error %q does not name the limit", res.Err)
	}
}

// TestAttackSlotsPerClient: one host opening many silent transfers takes
// at most its share of the slots; another host is still served.
func TestAttackSlotsPerClient(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(100_000, 33)}},
		MaxTransfers: 8, MaxTransfersPerClient: 3, Timeout: 2 * time.Second, Retries: 5})
	var busy int
	for range 8 {
		rc := sendRRQ(t, ts.addr, "127.0.0.1", "octet", "f", "blksize", "1468", "windowsize", "4")
		if p := rc.read(t); binary.BigEndian.Uint16(p) == opERROR {
			if !bytes.Contains(p, []byte("busy")) {
				t.Fatalf("refusal %q does not say busy", p)
			}
			busy++
		}
	}
	if busy != 5 {
		t.Fatalf("%d of 8 requests from one host refused, want 5 (3 per host)", busy)
	}
	c := sendRRQ(t, ts.addr, "127.0.0.2", "octet", "f", "windowsize", "4")
	if p := c.read(t); binary.BigEndian.Uint16(p) != opOACK {
		t.Fatalf("a second host got %q, want an OACK", p)
	}
}

// TestAttackClientGone: a client that goes away (its port closed, so the
// kernel answers with ICMP port unreachable) or says so with an ERROR frees
// its slot at once, not after the timeouts.
func TestAttackClientGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []string
	}{
		{"lock-step", []string{"blksize", "1468"}},
		{"windowed", []string{"blksize", "1468", "windowsize", "4"}},
	} {
		t.Run(tc.name+" closed port", func(t *testing.T) {
			gate := make(chan struct{})
			root := gatedFS{fstest.MapFS{"f": {Data: testfix.RandomBytes(100_000, 34)}}, gate}
			ts := startServer(t, Config{Root: root, Timeout: 3 * time.Second, Retries: 5})
			// The request's socket is closed before the server answers
			// (it is held in Open until then): the answer meets a closed
			// port, and the kernel says so with ICMP port unreachable.
			rc := sendRRQ(t, ts.addr, "127.0.0.1", "octet", "f", tc.opts...)
			waitActive(t, ts.srv, 1, time.Second)
			rc.c.Close()
			close(gate)
			waitActive(t, ts.srv, 0, time.Second)
			if res := ts.rec.next(t); res.Outcome != OutcomeAborted {
				t.Errorf("outcome %s (%v), want aborted", res.Outcome, res.Err)
			}
		})
		t.Run(tc.name+" error", func(t *testing.T) {
			ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(100_000, 34)}}, Timeout: 3 * time.Second, Retries: 5})
			rc, first := rawRRQ(t, ts.addr, "f", tc.opts...)
			parseOACK(t, first)
			rc.send(t, rawError(0, "bye"))
			waitActive(t, ts.srv, 0, time.Second)
		})
	}
}

// gatedFS holds every Open until gate is closed.
type gatedFS struct {
	fs   fstest.MapFS
	gate chan struct{}
}

func (g gatedFS) Open(name string) (fs.File, error) {
	<-g.gate
	return g.fs.Open(name)
}

// TestAttackShutdown: stopping the server while transfers wait on clients
// with long timeouts (theirs or the server's) returns within 2 s.
func TestAttackShutdown(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(1_000_000, 35)}},
		Timeout: 20 * time.Second, Retries: 5, MaxClientTimeout: 30 * time.Second, MaxTransfersPerClient: 32})
	for i := range 20 {
		opts := []string{"blksize", "1468", "timeout", "30"}
		if i%2 == 1 {
			opts = append(opts, "windowsize", "8")
		}
		rc, first := rawRRQ(t, ts.addr, "f", opts...)
		parseOACK(t, first)
		rc.send(t, []byte{0, 4, 0, 0})
	}
	waitActive(t, ts.srv, 20, time.Second)
	start := time.Now()
	ts.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("shutdown took %v with 20 transfers waiting, want under 2 s", d)
	}
}

// TestAttackStrictParser: requests the strict parser rejects (duplicate
// options, too many options, a mode other than octet or netascii) get a
// TFTP ERROR and never a transfer.
func TestAttackStrictParser(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(10_000, 36)}}})
	many := []string{}
	for i := range 17 {
		many = append(many, fmt.Sprintf("x%d", i), "1")
	}
	for _, tc := range []struct {
		name, mode string
		opts       []string
	}{
		{"duplicate blksize", "octet", []string{"blksize", "1468", "blksize", "512"}},
		{"duplicate case-folded", "octet", []string{"tsize", "0", "TSIZE", "0"}},
		{"17 options", "octet", many},
		{"mail mode", "mail", nil},
		{"unknown mode", "binary", []string{"blksize", "1468"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rc := sendRRQ(t, ts.addr, "127.0.0.1", tc.mode, "f", tc.opts...)
			p := rc.read(t)
			if len(p) < 4 || binary.BigEndian.Uint16(p) != opERROR {
				t.Fatalf("got % x, want a TFTP ERROR", p[:min(len(p), 8)])
			}
		})
	}
	if ts.srv.Active() != 0 {
		t.Fatalf("%d transfers running after refused requests", ts.srv.Active())
	}
}

// TestNetascii: a netascii request gets the file with line ends converted.
func TestNetascii(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"menu": {Data: []byte("a\nb\rc\n")}}})
	rc := sendRRQ(t, ts.addr, "127.0.0.1", "netascii", "menu")
	p := rc.read(t)
	if binary.BigEndian.Uint16(p) != opDATA || string(p[4:]) != "a\r\nb\r\x00c\r\n" {
		t.Fatalf("got %q, want DATA 1 with a\\r\\nb\\r\\0c\\r\\n", p)
	}
	rc.send(t, []byte{0, 4, 0, 1})
	if res := ts.rec.next(t); res.Outcome != OutcomeOK {
		t.Fatalf("outcome %s (%v)", res.Outcome, res.Err)
	}
}

// TestRepeatedRequest replays curl's answer to a lost OACK: the same read request again from the
// same port while the first transfer runs. The server must not start a second transfer (the client
// follows the first; the second's ERROR when it gave up would end the client's good transfer).
func TestRepeatedRequest(t *testing.T) {
	data := testfix.RandomBytes(3*512+7, 3)
	// A timeout the transfer cannot reach on a loaded machine: the first transfer must still run
	// when the request comes again.
	ts := startServer(t, Config{Root: fstest.MapFS{"nbp": {Data: data}}, Timeout: 5 * time.Second, Retries: 3})
	rc, oack := rawRRQ(t, ts.addr, "nbp", "tsize", "0")
	if got := parseOACK(t, oack)["tsize"]; got != strconv.Itoa(len(data)) {
		t.Fatalf("OACK tsize %q", got)
	}
	srv, err := net.ResolveUDPAddr("udp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	pkt := append([]byte{0, 1}, "nbp\x00octet\x00tsize\x000\x00"...)
	if _, err := rc.c.WriteToUDP(pkt, srv); err != nil { // the request again, from the same port
		t.Fatal(err)
	}
	first := rc.tid
	// The transfer cannot end before its OACK is acknowledged: wait until the server has seen the
	// repeated request, else a fast transfer could be over before the request port reads it.
	testfix.WaitFor(t, "the repeated request counted", 5*time.Second, func() bool { return testutil.ToFloat64(ts.srv.m.repeated) == 1 })
	var got []byte
	rc.send(t, []byte{0, 4, 0, 0}) // ACK of the OACK
	for block := uint16(1); ; block++ {
		p := rc.read(t)
		if rc.tid.String() != first.String() {
			t.Fatalf("block %d: a datagram from %v, a second transfer (the first is %v): % x", block, rc.tid, first, p[:min(len(p), 20)])
		}
		if binary.BigEndian.Uint16(p) != 3 || binary.BigEndian.Uint16(p[2:]) != block {
			t.Fatalf("want DATA %d, got % x", block, p[:min(len(p), 20)])
		}
		got = append(got, p[4:]...)
		rc.send(t, []byte{0, 4, byte(block >> 8), byte(block)})
		if len(p) < 4+512 {
			break
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	if r := ts.rec.next(t); r.Outcome != OutcomeOK {
		t.Errorf("transfer %v: %v", r.Outcome, r.Err)
	}
	// Nothing more arrives: no second transfer's OACK or ERROR (a second transfer sends its OACK
	// at once).
	rc.c.SetReadDeadline(time.Now().Add(time.Second))
	if n, from, err := rc.c.ReadFromUDP(rc.buf); err == nil {
		t.Errorf("after the transfer, % x from %v", rc.buf[:min(n, 40)], from)
	}
	if n := testutil.ToFloat64(ts.srv.m.repeated); n != 1 {
		t.Errorf("repeated requests counted %v, want 1", n)
	}
}

// TestAttackManyAddresses: one host with 33 addresses took every slot, 16 per address (issue 25).
// Addresses that are no node of the server share MaxUnknownTransfers; a node still gets a slot.
func TestAttackManyAddresses(t *testing.T) {
	node := netip.MustParseAddr("127.0.0.2")
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(100_000, 34)}},
		MaxTransfers: 8, MaxTransfersPerClient: 3, MaxUnknownTransfers: 2, Timeout: 2 * time.Second, Retries: 5,
		Known: func(a netip.Addr) bool { return a == node }})
	busy := 0
	for i := 3; i <= 10; i++ {
		rc := sendRRQ(t, ts.addr, fmt.Sprintf("127.0.0.%d", i), "octet", "f", "blksize", "1468", "windowsize", "4")
		if p := rc.read(t); binary.BigEndian.Uint16(p) == opERROR {
			if !bytes.Contains(p, []byte("busy")) {
				t.Fatalf("refusal %q does not say busy", p)
			}
			busy++
		}
	}
	if busy != 6 {
		t.Fatalf("%d of 8 requests from 8 unknown addresses refused, want 6 (2 for all of them)", busy)
	}
	for range 3 {
		c := sendRRQ(t, ts.addr, node.String(), "octet", "f", "windowsize", "4")
		if p := c.read(t); binary.BigEndian.Uint16(p) != opOACK {
			t.Fatalf("the node got %q, want an OACK", p)
		}
	}
}
