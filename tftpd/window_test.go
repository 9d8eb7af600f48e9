package tftpd

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
)

// rawFetchWindowed acknowledges the OACK and receives the file as an RFC
// 7440 receiver does: it acknowledges the last block of every window of
// window blocks, and the final block. Blocks in drop are discarded the first
// time they arrive, as if lost: the client then acknowledges the last block
// it has in order (once per gap), and the server must go on from the next.
// silent[n] withholds the acknowledgement of the window ending at block n
// once, so that the server times out and sends the window again; the client
// acknowledges again when that window's last block comes back.
func rawFetchWindowed(t testing.TB, rc *rawClient, blksize, window int, drop map[uint64]bool, silent ...uint64) []byte {
	t.Helper()
	quiet := map[uint64]bool{}
	for _, b := range silent {
		quiet[b] = true
	}
	var out []byte
	ack := func(b uint64) { rc.send(t, []byte{0, 4, byte(b >> 8), byte(b)}) }
	ack(0)
	next, inWindow, gapAcked := uint64(1), 0, false
	for {
		p := rc.read(t)
		if len(p) < 4 || binary.BigEndian.Uint16(p) != opDATA {
			t.Fatalf("want DATA %d, got % x", next, p[:min(len(p), 8)])
		}
		// Widen the 16-bit block number next to the one expected.
		b := next - 1 + uint64(binary.BigEndian.Uint16(p[2:])-uint16(next-1))
		switch {
		case drop[b]:
			delete(drop, b)
		case b == next:
			out = append(out, p[4:]...)
			next++
			inWindow++
			gapAcked = false
			if len(p)-4 < blksize {
				ack(b)
				return out
			}
			if inWindow == window {
				inWindow = 0
				if quiet[b] {
					delete(quiet, b)
					continue
				}
				ack(b)
			}
		case b > next && b < next+uint64(window) && !gapAcked:
			ack(next - 1)
			inWindow, gapAcked = 0, true
		case b == next-1:
			ack(b) // a window sent again ends with a block we have: say so again
		}
	}
}

func TestParseRRQ(t *testing.T) {
	rrq := func(parts ...string) []byte {
		b := []byte{0, 1}
		for _, p := range parts {
			b = append(append(b, p...), 0)
		}
		return b
	}
	tests := []struct {
		name    string
		in      []byte
		want    request
		wantErr string
	}{
		{name: "plain", in: rrq("pxelinux.0", "octet"), want: request{filename: "pxelinux.0", mode: "octet", opts: map[string]string{}}},
		{name: "options, names case-insensitive", in: rrq("ipxe.efi", "OCTET", "BlkSize", "1468", "windowsize", "4", "tsize", "0"),
			want: request{filename: "ipxe.efi", mode: "octet", opts: map[string]string{"blksize": "1468", "windowsize": "4", "tsize": "0"}}},
		{name: "netascii", in: rrq("a", "netascii"), want: request{filename: "a", mode: "netascii", opts: map[string]string{}}},
		{name: "write request", in: []byte{0, 2, 'a', 0, 'o', 'c', 't', 'e', 't', 0}, wantErr: "not RRQ"},
		{name: "short", in: []byte{0}, wantErr: "shorter than an opcode"},
		{name: "no NUL at end", in: []byte{0, 1, 'a', 0, 'o', 'c', 't', 'e', 't'}, wantErr: "does not end in NUL"},
		{name: "no mode", in: rrq("a"), wantErr: "no mode"},
		{name: "mail mode", in: rrq("a", "mail"), wantErr: "mode"},
		{name: "option without value", in: rrq("a", "octet", "blksize"), wantErr: "no value"},
		{name: "duplicate option", in: rrq("a", "octet", "blksize", "512", "BLKSIZE", "1468"), wantErr: "twice"},
		{name: "too long", in: rrq("a", "octet", "x", string(make([]byte, 1100))), wantErr: "limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseRRQ(tc.in)
			if tc.wantErr != "" {
				if err == nil || !bytes.Contains([]byte(err.Error()), []byte(tc.wantErr)) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(request{})); diff != "" {
				t.Errorf("parseRRQ (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNegotiate(t *testing.T) {
	tests := []struct {
		name     string
		opts     map[string]string
		size     int64
		cap      int
		ceiling  time.Duration // 0: 255 s
		want     params
		wantOACK map[string]string
	}{
		{name: "no options", opts: map[string]string{}, cap: 1468, want: params{blockSize: 512, windowSize: 1}},
		{name: "UEFI", opts: map[string]string{"blksize": "1468", "windowsize": "4", "tsize": "0"}, size: 1000, cap: 1468,
			want: params{blockSize: 1468, windowSize: 4}, wantOACK: map[string]string{"blksize": "1468", "windowsize": "4", "tsize": "1000"}},
		{name: "blksize capped", opts: map[string]string{"blksize": "9000"}, cap: 1468,
			want: params{blockSize: 1468, windowSize: 1}, wantOACK: map[string]string{"blksize": "1468"}},
		{name: "window capped at 64", opts: map[string]string{"blksize": "1468", "windowsize": "1000"}, cap: 1468,
			want: params{blockSize: 1468, windowSize: 64}, wantOACK: map[string]string{"blksize": "1468", "windowsize": "64"}},
		{name: "window capped by memory", opts: map[string]string{"blksize": "65464", "windowsize": "64"}, cap: 65464,
			want: params{blockSize: 65464, windowSize: 16}, wantOACK: map[string]string{"blksize": "65464", "windowsize": "16"}},
		{name: "timeout", opts: map[string]string{"timeout": "2", "windowsize": "8"}, cap: 1468,
			want: params{blockSize: 512, windowSize: 8, timeout: 2 * time.Second}, wantOACK: map[string]string{"timeout": "2", "windowsize": "8"}},
		{name: "timeout above the ceiling left out", opts: map[string]string{"timeout": "255", "windowsize": "8"}, cap: 1468, ceiling: 5 * time.Second,
			want: params{blockSize: 512, windowSize: 8}, wantOACK: map[string]string{"windowsize": "8"}},
		{name: "timeout at the ceiling", opts: map[string]string{"timeout": "5"}, cap: 1468, ceiling: 5 * time.Second,
			want: params{blockSize: 512, windowSize: 1, timeout: 5 * time.Second}, wantOACK: map[string]string{"timeout": "5"}},
		{name: "bad values left out", opts: map[string]string{"blksize": "7", "windowsize": "0", "timeout": "256", "tsize": "12", "multicast": ""}, cap: 1468,
			want: params{blockSize: 512, windowSize: 1}},
		{name: "non-numbers left out", opts: map[string]string{"blksize": "big", "windowsize": "-4", "timeout": "1s"}, cap: 1468,
			want: params{blockSize: 512, windowSize: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ceiling := tc.ceiling
			if ceiling == 0 {
				ceiling = maxTimeoutSeconds * time.Second
			}
			got := negotiate(request{filename: "f", mode: "octet", opts: tc.opts}, tc.size, tc.cap, ceiling)
			var gotOACK map[string]string
			if got.oack != nil {
				gotOACK = parseOACK(t, got.oack)
			}
			got.oack = nil
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(params{})); diff != "" {
				t.Errorf("params (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOACK, gotOACK); diff != "" {
				t.Errorf("OACK (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWindowedLoss drops blocks in and at the ends of windows; the client
// acknowledges the last block it has in order and the server must go on
// from there. Every byte must arrive, and the resends be counted.
func TestWindowedLoss(t *testing.T) {
	data := testfix.RandomBytes(100*1468+77, 21)
	// A lost final block is only sent again on the timeout: short, with retries to spare.
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 500 * time.Millisecond, Retries: 6})
	for _, tc := range []struct {
		name string
		drop []uint64
	}{
		{"first block of a window", []uint64{1}},
		{"middle", []uint64{6, 7}},
		{"last of a window", []uint64{8}},
		{"the final block", []uint64{101}},
		{"several windows", []uint64{3, 20, 21, 50, 99}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			drop := map[uint64]bool{}
			for _, b := range tc.drop {
				drop[b] = true
			}
			rc, first := rawRRQ(t, ts.addr, "f", "blksize", "1468", "windowsize", "8")
			parseOACK(t, first)
			got := rawFetchWindowed(t, rc, 1468, 8, drop)
			if !bytes.Equal(got, data) {
				t.Fatalf("got %d bytes, want the %d-byte file", len(got), len(data))
			}
			res := ts.rec.next(t)
			if res.Outcome != OutcomeOK || res.WindowSize != 8 || res.Retransmissions < len(tc.drop) {
				t.Fatalf("result %+v: want ok, window 8, at least %d retransmissions", res, len(tc.drop))
			}
		})
	}
}

// TestWindowedTimeout withholds one window's ACK: the server must send the
// window again after its timeout, then carry on.
func TestWindowedTimeout(t *testing.T) {
	data := testfix.RandomBytes(40*1024+5, 22)
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 200 * time.Millisecond, Retries: 3})
	rc, first := rawRRQ(t, ts.addr, "f", "blksize", "1024", "windowsize", "4")
	parseOACK(t, first)
	start := time.Now()
	got := rawFetchWindowed(t, rc, 1024, 4, nil, 8)
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	if d := time.Since(start); d < 200*time.Millisecond {
		t.Errorf("finished in %v: the withheld ACK should have cost one 200 ms timeout", d)
	}
	res := ts.rec.next(t)
	if res.Outcome != OutcomeOK || res.Retransmissions != 4 {
		t.Fatalf("result %+v: want ok and the 4 blocks of one window sent again", res)
	}
}

// TestWindowedRollover sends more than 65535 blocks, so block numbers wrap.
func TestWindowedRollover(t *testing.T) {
	data := testfix.RandomBytes(70_000*8+3, 23) // 70,001 blocks of 8 bytes
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}})
	rc, first := rawRRQ(t, ts.addr, "f", "blksize", "8", "windowsize", "64", "tsize", "0")
	if diff := cmp.Diff(map[string]string{"blksize": "8", "windowsize": "64", "tsize": fmt.Sprint(len(data))}, parseOACK(t, first)); diff != "" {
		t.Fatalf("OACK (-want +got):\n%s", diff)
	}
	got := rawFetchWindowed(t, rc, 8, 64, map[uint64]bool{65535: true, 65536: true, 65537: true})
	if !bytes.Equal(got, data) {
		t.Fatalf("got %d bytes, want %d", len(got), len(data))
	}
	if res := ts.rec.next(t); res.Outcome != OutcomeOK {
		t.Fatalf("result %+v", res)
	}
}

// TestWindowedRefusals: a windowed request for a missing file, a bad path,
// or beyond the transfer limit gets an ERROR with the right code.
func TestWindowedRefusals(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(100_000, 24)}}, MaxTransfers: 1, Timeout: 300 * time.Millisecond, Retries: 2})
	for _, tc := range []struct {
		name string
		code uint16
		out  Outcome
	}{
		{"missing", errCodeNotFound, OutcomeNotFound},
		{"../etc/passwd", errCodeAccess, OutcomeRefused},
	} {
		_, p := rawRRQ(t, ts.addr, tc.name, "windowsize", "4")
		if len(p) < 4 || binary.BigEndian.Uint16(p) != opERROR || binary.BigEndian.Uint16(p[2:]) != tc.code {
			t.Errorf("%s: got % x, want ERROR %d", tc.name, p[:min(len(p), 8)], tc.code)
		}
		if res := ts.rec.next(t); res.Outcome != tc.out {
			t.Errorf("%s: outcome %s, want %s", tc.name, res.Outcome, tc.out)
		}
	}
	// Hold the only slot, then ask again.
	_, first := rawRRQ(t, ts.addr, "f", "windowsize", "4")
	parseOACK(t, first)
	_, p := rawRRQ(t, ts.addr, "f", "windowsize", "4")
	if len(p) < 4 || binary.BigEndian.Uint16(p) != opERROR || !bytes.Contains(p, []byte("server busy")) {
		t.Errorf("second transfer: got %q, want ERROR server busy", p)
	}
	outcomes := []Outcome{ts.rec.next(t).Outcome, ts.rec.next(t).Outcome}
	if diff := cmp.Diff([]Outcome{OutcomeRefused, OutcomeTimeout}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

// TestWindowedClientAbort: an ERROR from the client mid-transfer ends it as
// aborted (not a probe), and the server sends nothing more.
func TestWindowedClientAbort(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(100_000, 25)}}})
	rc, first := rawRRQ(t, ts.addr, "f", "blksize", "1000", "windowsize", "2")
	parseOACK(t, first)
	rc.send(t, []byte{0, 4, 0, 0})
	rc.read(t)
	rc.read(t)
	rc.send(t, []byte{0, 4, 0, 2})
	rc.read(t)
	rc.send(t, rawError(0, "disk full"))
	res := ts.rec.next(t)
	var pe *peerError
	if res.Outcome != OutcomeAborted || !errors.As(res.Err, &pe) || pe.msg != "disk full" {
		t.Fatalf("result %+v, want aborted with the client's message", res)
	}
	rc.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	buf := make([]byte, 2000)
	for {
		n, _, err := rc.c.ReadFromUDP(buf)
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal(err)
			}
			break
		}
		if binary.BigEndian.Uint16(buf[2:]) > 4 {
			t.Fatalf("server sent % x after the client's ERROR", buf[:min(n, 4)])
		}
	}
}

// TestWindowedShutdown: stopping the server ends a windowed transfer.
func TestWindowedShutdown(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(1_000_000, 26)}}, Timeout: 200 * time.Millisecond, Retries: 2})
	rc, first := rawRRQ(t, ts.addr, "f", "windowsize", "4")
	parseOACK(t, first)
	rc.send(t, []byte{0, 4, 0, 0}) // then never acknowledge a window
	start := time.Now()
	ts.stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	if res := ts.rec.next(t); res.Outcome == OutcomeOK {
		t.Errorf("transfer ended %s after shutdown", res.Outcome)
	}
}

// TestAnswersFromRequestAddress: both senders answer from the address the
// request was sent to, not the one routing would pick (127.0.0.1 for a
// client on 127.0.0.1): ours binds its socket there, pin/tftp's answers go
// out of the TFTP port with that source address (pinPort.WriteTo).
func TestAnswersFromRequestAddress(t *testing.T) {
	for _, tc := range []struct {
		name   string
		window int
	}{{"windowed", 4}, {"lock-step", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			ts := startServerOn(t, Config{Root: fstest.MapFS{"f": {Data: []byte("hello")}}}, "0.0.0.0:0")
			_, port, err := net.SplitHostPort(ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			rc, first := rawRRQ(t, net.JoinHostPort("127.0.0.2", port), "f", "windowsize", strconv.Itoa(tc.window))
			if !rc.tid.IP.Equal(net.IPv4(127, 0, 0, 2)) {
				t.Errorf("answer came from %v, want 127.0.0.2", rc.tid)
			}
			var got []byte
			if tc.window > 1 {
				parseOACK(t, first)
				got = rawFetchWindowed(t, rc, 512, 4, nil)
			} else {
				got, _ = rawFetchLockStep(t, rc, first, 512, -1)
			}
			if string(got) != "hello" {
				t.Errorf("got %q", got)
			}
			if res := ts.rec.next(t); res.Outcome != OutcomeOK || res.Bytes != 5 {
				t.Errorf("result %+v", res)
			}
		})
	}
}

func TestWindowedEmptyAndExactFiles(t *testing.T) {
	files := fstest.MapFS{"empty": {Data: nil}, "exact": {Data: testfix.RandomBytes(4*512, 27)}}
	ts := startServer(t, Config{Root: files})
	for name, f := range files {
		rc, first := rawRRQ(t, ts.addr, name, "windowsize", "4", "tsize", "0")
		if got := parseOACK(t, first)["tsize"]; got != fmt.Sprint(len(f.Data)) {
			t.Errorf("%s: tsize %s", name, got)
		}
		got := rawFetchWindowed(t, rc, 512, 4, nil)
		if sha256.Sum256(got) != sha256.Sum256(f.Data) {
			t.Errorf("%s: got %d bytes, want %d", name, len(got), len(f.Data))
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeOK {
			t.Errorf("%s: %+v", name, res)
		}
	}
}

// FuzzRequest feeds arbitrary datagrams to the read-request parser and the
// option negotiation that the TFTP port runs on every datagram: neither may
// panic, and what they grant must stay within the RFCs' and our limits.
func FuzzRequest(f *testing.F) {
	rrq := func(parts ...string) []byte {
		b := []byte{0, 1}
		for _, p := range parts {
			b = append(append(b, p...), 0)
		}
		return b
	}
	for _, b := range [][]byte{
		rrq("ipxe.efi", "octet", "blksize", "1468", "windowsize", "4", "tsize", "0"),
		rrq("undionly.kpxe", "octet"),
		rrq("a", "netascii", "timeout", "3"),
		rrq("a", "octet", "windowsize", "65535", "blksize", "65464"),
		rrq("a", "octet", "blksize", "1468", "BLKSIZE", "512"),
		{0, 1, 'a', 0, 'o'},
		{0, 2, 'a', 0, 'o', 'c', 't', 'e', 't', 0},
		{},
	} {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := parseRRQ(b)
		if err != nil {
			return
		}
		if r.mode != "octet" && r.mode != "netascii" {
			t.Fatalf("mode %q accepted", r.mode)
		}
		for _, cap := range []int{minBlockCap, DefaultMaxBlockSize, maxBlockCap} {
			p := negotiate(r, 1000, cap, maxTimeoutSeconds*time.Second)
			if p.blockSize < minBlockSize || p.blockSize > cap {
				t.Fatalf("blksize %d outside %d..%d", p.blockSize, minBlockSize, cap)
			}
			if p.windowSize < 1 || p.windowSize > maxWindowSize || (p.windowSize > 1 && p.windowSize*p.blockSize > maxWindowBytes) {
				t.Fatalf("windowsize %d with blksize %d", p.windowSize, p.blockSize)
			}
			if p.oack == nil {
				continue
			}
			for name := range parseOACK(t, p.oack) {
				if _, asked := r.opts[name]; !asked {
					t.Fatalf("OACK grants %q, which was not asked for", name)
				}
			}
		}
	})
}
