package tftpd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"github.com/pin/tftp/v3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
)

// recorder is an Observer that keeps what it is told.
type recorder struct {
	mu     sync.Mutex
	starts []TransferInfo
	dones  []TransferResult
	doneC  chan TransferResult
}

func newRecorder() *recorder { return &recorder{doneC: make(chan TransferResult, 64)} }

func (r *recorder) OnTransferStart(i TransferInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts = append(r.starts, i)
}

func (r *recorder) OnTransferDone(res TransferResult) {
	r.mu.Lock()
	r.dones = append(r.dones, res)
	r.mu.Unlock()
	select {
	case r.doneC <- res:
	default:
	}
}

// next waits for the next finished transfer.
func (r *recorder) next(t *testing.T) TransferResult {
	t.Helper()
	select {
	case res := <-r.doneC:
		return res
	case <-time.After(10 * time.Second):
		t.Fatal("no transfer finished within 10s")
		return TransferResult{}
	}
}

type testServer struct {
	addr string
	rec  *recorder
	reg  *prometheus.Registry
	srv  *Server
	stop func() // cancels and waits for Serve; safe to call twice
}

func startServer(t testing.TB, cfg Config) *testServer {
	t.Helper()
	return startServerOn(t, cfg, "127.0.0.1:0")
}

// startServerOn is startServer listening on addr.
func startServerOn(t testing.TB, cfg Config, addr string) *testServer {
	t.Helper()
	return startServerWith(t, cfg, addr, nil)
}

// startServerWith is startServerOn with tweak applied to the Server before
// Serve starts (nil: none), for the fields no Config sets.
func startServerWith(t testing.TB, cfg Config, addr string, tweak func(*Server)) *testServer {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp", ua)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{addr: conn.LocalAddr().String(), rec: newRecorder(), reg: prometheus.NewRegistry()}
	if cfg.Observer == nil {
		cfg.Observer = ts.rec
	}
	cfg.Registerer = ts.reg
	if _, bench := t.(*testing.B); bench {
		cfg.Logger = zap.NewNop()
	}
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	// Tests that want a timeout set their own; the rest get one that a test client starved of
	// CPU under -race beside the main run still meets (500 ms x 2 did not, in CI at stop 45).
	if cfg.Timeout == 0 {
		cfg.Timeout = 4 * time.Second
	}
	if cfg.Retries == 0 {
		cfg.Retries = 3
	}
	ts.srv, err = New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tweak != nil {
		tweak(ts.srv)
	}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- ts.srv.Serve(ctx, conn) }()
	var once sync.Once
	ts.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-errc:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
			case <-time.After(15 * time.Second):
				t.Error("Serve did not return within 15s of cancel")
			}
		})
	}
	t.Cleanup(ts.stop)
	return ts
}

// fetch downloads name with the pin/tftp client.
func fetch(addr, name string, blksize int, tsize bool) ([]byte, int64, error) {
	c, err := tftp.NewClient(addr)
	if err != nil {
		return nil, 0, err
	}
	c.SetTimeout(time.Second)
	c.SetRetries(3)
	if blksize > 0 {
		c.SetBlockSize(blksize)
	}
	c.RequestTSize(tsize)
	wt, err := c.Receive(name, "octet")
	if err != nil {
		return nil, 0, err
	}
	size := int64(-1)
	if it, ok := wt.(tftp.IncomingTransfer); ok {
		if n, ok := it.Size(); ok {
			size = n
		}
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, size, err
	}
	return buf.Bytes(), size, nil
}

// counter reads a metric from the registry: name, optional outcome label.
func counter(t *testing.T, reg *prometheus.Registry, name, outcome string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var sum float64
		for _, m := range mf.GetMetric() {
			match := outcome == ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == outcome {
					match = true
				}
			}
			if !match {
				continue
			}
			switch {
			case m.Counter != nil:
				sum += m.GetCounter().GetValue()
			case m.Gauge != nil:
				sum += m.GetGauge().GetValue()
			case m.Histogram != nil:
				sum += float64(m.GetHistogram().GetSampleCount())
			}
		}
		return sum
	}
	return 0
}

func TestNewConfigErrors(t *testing.T) {
	root := fstest.MapFS{}
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no root", Config{}, "Root is nil"},
		{"blksize too small", Config{Root: root, MaxBlockSize: 512}, "MaxBlockSize 512 out of range"},
		{"blksize too large", Config{Root: root, MaxBlockSize: 65465}, "MaxBlockSize 65465 out of range"},
		{"negative transfers", Config{Root: root, MaxTransfers: -1}, "MaxTransfers -1 is negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want containing %q", err, tc.want)
			}
		})
	}
	// Two servers on one registry share its collectors (internal/promreg), as dhcpd's do.
	reg := prometheus.NewRegistry()
	a, err := New(Config{Root: root, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(Config{Root: root, Registerer: reg})
	if err != nil {
		t.Fatalf("second New on one registry: %v", err)
	}
	if a.m.bytes != b.m.bytes {
		t.Fatal("the second server counts into collectors of its own, not the registered ones")
	}
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		bytes int64
		want  Outcome
	}{
		{"probe abort after OACK", fmt.Errorf("OACK: %w", &peerError{block: 0, code: 8, msg: "User aborted the transfer"}), 0, OutcomeProbe},
		{"code 5 after OACK", &peerError{block: 0, code: 5}, 0, OutcomeProbe},
		{"abort mid transfer", fmt.Errorf("block 13: %w", &peerError{block: 12, code: 0, msg: "disk full"}), 17616, OutcomeAborted},
		{"client gone", fmt.Errorf("%w (recv after block 3): connection refused", errGone), 4404, OutcomeAborted},
		{"timeout", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}, 1468, OutcomeTimeout},
		{"shutdown", fmt.Errorf("x: %w", errShutdown), 0, OutcomeError},
		{"other", errors.New("read /x: input/output error"), 0, OutcomeError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := classify(tc.err, tc.bytes); got != tc.want {
				t.Fatalf("classify(%v) = %s, want %s", tc.err, got, tc.want)
			}
		})
	}
	for o, failed := range map[Outcome]bool{OutcomeOK: false, OutcomeProbe: false, OutcomeAborted: true, OutcomeTimeout: true, OutcomeNotFound: true, OutcomeRefused: true, OutcomeError: true} {
		if o.Failed() != failed {
			t.Errorf("%s.Failed() = %v, want %v", o, o.Failed(), failed)
		}
	}
}

func TestFetchLoopback(t *testing.T) {
	files := map[string][]byte{
		"undionly.kpxe":        testfix.RandomBytes(70_123, 1),
		"boot/default/vmlinuz": testfix.RandomBytes(3_000_000, 2),
		"exact":                testfix.RandomBytes(1468*4, 3), // ends with an empty DATA block
		"empty":                {},
	}
	root := fstest.MapFS{}
	for n, b := range files {
		root[n] = &fstest.MapFile{Data: b, Mode: 0o644}
	}
	ts := startServer(t, Config{Root: root})
	tests := []struct {
		request string
		file    string
		blksize int
		tsize   bool
		wantBS  int
	}{
		{"undionly.kpxe", "undionly.kpxe", 0, false, 512},
		{"/undionly.kpxe", "undionly.kpxe", 1468, true, 1468},
		{`boot\default\vmlinuz`, "boot/default/vmlinuz", 1468, true, 1468},
		{"boot/default/vmlinuz", "boot/default/vmlinuz", 8192, true, DefaultMaxBlockSize}, // capped
		{"exact", "exact", 1468, true, 1468},
		{"empty", "empty", 1468, false, 1468},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%d", tc.request, tc.blksize), func(t *testing.T) {
			got, size, err := fetch(ts.addr, tc.request, tc.blksize, tc.tsize)
			if err != nil {
				t.Fatalf("fetch %q: %v", tc.request, err)
			}
			want := files[tc.file]
			if sha256.Sum256(got) != sha256.Sum256(want) {
				t.Fatalf("fetch %q: sha256 differs (got %d bytes, want %d)", tc.request, len(got), len(want))
			}
			if tc.tsize && size != int64(len(want)) {
				t.Errorf("tsize = %d, want %d", size, len(want))
			}
			res := ts.rec.next(t)
			if res.Outcome != OutcomeOK || res.Path != tc.file || res.Bytes != int64(len(want)) || res.BlockSize != tc.wantBS {
				t.Errorf("result = %+v, want ok, path %q, %d bytes, blksize %d", res, tc.file, len(want), tc.wantBS)
			}
		})
	}
	if got := counter(t, ts.reg, "bootfabric_tftp_transfers_total", "ok"); got != float64(len(tests)) {
		t.Errorf("transfers_total{ok} = %v, want %d", got, len(tests))
	}
	var wantBytes int
	for _, tc := range tests {
		wantBytes += len(files[tc.file])
	}
	if got := counter(t, ts.reg, "bootfabric_tftp_sent_bytes_total", ""); got != float64(wantBytes) {
		t.Errorf("sent_bytes_total = %v, want %d", got, wantBytes)
	}
}

func TestRefusals(t *testing.T) {
	root := fstest.MapFS{
		"ok":      {Data: []byte("fine")},
		"dir/x":   {Data: []byte("x")},
		"private": {Data: []byte("secret")},
	}
	ts := startServer(t, Config{Root: root})
	tests := []struct {
		request string
		want    Outcome
		msg     string
	}{
		{"missing", OutcomeNotFound, "not exist"},
		{"dir", OutcomeNotFound, "not a regular file"},
		{"../ok", OutcomeRefused, `".." element`},
		{"dir/../../etc/passwd", OutcomeRefused, `".." element`},
		{"/", OutcomeRefused, "names the root"},
		{strings.Repeat("x", 300), OutcomeRefused, "limit 255"},
	}
	for _, tc := range tests {
		t.Run(tc.request[:min(len(tc.request), 20)], func(t *testing.T) {
			_, _, err := fetch(ts.addr, tc.request, 1468, true)
			if err == nil || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("fetch %q: error %v, want TFTP error containing %q", tc.request, err, tc.msg)
			}
			res := ts.rec.next(t)
			if res.Outcome != tc.want {
				t.Fatalf("outcome = %s, want %s (err %v)", res.Outcome, tc.want, res.Err)
			}
		})
	}

	t.Run("write", func(t *testing.T) {
		c, err := tftp.NewClient(ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		c.SetTimeout(time.Second)
		c.SetRetries(2)
		rf, err := c.Send("ok", "octet")
		if err == nil {
			_, err = rf.ReadFrom(strings.NewReader("overwritten"))
		}
		if err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Fatalf("write: error %v, want TFTP error containing read-only", err)
		}
		if got, _, err := fetch(ts.addr, "ok", 0, false); err != nil || string(got) != "fine" {
			t.Fatalf("after refused write: %q, %v", got, err)
		}
		ts.rec.next(t)
	})
}

// rawClient is a hand-made TFTP client socket for replaying what firmware
// does; tid is the server's transfer address once it has answered.
type rawClient struct {
	c   *net.UDPConn
	tid *net.UDPAddr
	buf []byte // receive scratch; read returns copies
}

// rawRRQ sends a read request with options from a fresh socket and returns
// the client and the server's first answer.
func rawRRQ(t testing.TB, addr, name string, opts ...string) (*rawClient, []byte) {
	t.Helper()
	srv, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	pkt := []byte{0, 1}
	pkt = append(append(pkt, name...), 0)
	pkt = append(append(pkt, "octet"...), 0)
	for _, o := range opts {
		pkt = append(append(pkt, o...), 0)
	}
	if _, err := c.WriteToUDP(pkt, srv); err != nil {
		t.Fatal(err)
	}
	rc := &rawClient{c: c, buf: make([]byte, 65536)}
	return rc, rc.read(t)
}

// read returns the next datagram (a copy the caller may keep).
func (rc *rawClient) read(t testing.TB) []byte {
	t.Helper()
	rc.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, from, err := rc.c.ReadFromUDP(rc.buf)
	if err != nil {
		t.Fatalf("waiting for the server: %v", err)
	}
	rc.tid = from
	return bytes.Clone(rc.buf[:n])
}

func (rc *rawClient) send(t testing.TB, p []byte) {
	t.Helper()
	if _, err := rc.c.WriteToUDP(p, rc.tid); err != nil {
		t.Fatal(err)
	}
}

func parseOACK(t testing.TB, p []byte) map[string]string {
	t.Helper()
	if len(p) < 2 || binary.BigEndian.Uint16(p) != 6 {
		t.Fatalf("want OACK, got % x", p[:min(len(p), 40)])
	}
	parts := strings.Split(strings.TrimSuffix(string(p[2:]), "\x00"), "\x00")
	m := map[string]string{}
	for i := 0; i+1 < len(parts); i += 2 {
		m[parts[i]] = parts[i+1]
	}
	return m
}

func rawError(code uint16, msg string) []byte {
	p := []byte{0, 5, byte(code >> 8), byte(code)}
	return append(append(p, msg...), 0)
}

// TestUEFITsizeProbe replays what UEFI firmware does: RRQ with tsize only,
// abort with an ERROR after the OACK, then RRQ with blksize 1468 and
// windowsize 4. The first is a probe, the second a complete windowed
// transfer.
func TestUEFITsizeProbe(t *testing.T) {
	data := testfix.RandomBytes(1_000_003, 7)
	ts := startServer(t, Config{Root: fstest.MapFS{"ipxe.efi": {Data: data}}})

	for _, code := range []uint16{8, 5} { // EDK2 sends 8 (request denied); some firmware 5
		rc, first := rawRRQ(t, ts.addr, "ipxe.efi", "tsize", "0")
		if diff := cmp.Diff(map[string]string{"tsize": fmt.Sprint(len(data))}, parseOACK(t, first)); diff != "" {
			t.Fatalf("probe OACK (-want +got):\n%s", diff)
		}
		rc.send(t, rawError(code, "User aborted the transfer"))
		res := ts.rec.next(t)
		if res.Outcome != OutcomeProbe || res.Outcome.Failed() || res.Bytes != 0 || res.Size != int64(len(data)) {
			t.Fatalf("probe result = %+v, want probe with 0 bytes sent", res)
		}
	}

	rc, first := rawRRQ(t, ts.addr, "ipxe.efi", "blksize", "1468", "windowsize", "4", "tsize", "0")
	want := map[string]string{"blksize": "1468", "windowsize": "4", "tsize": fmt.Sprint(len(data))}
	if diff := cmp.Diff(want, parseOACK(t, first)); diff != "" {
		t.Fatalf("OACK (-want +got):\n%s", diff)
	}
	got := rawFetchWindowed(t, rc, 1468, 4, nil)
	if sha256.Sum256(got) != sha256.Sum256(data) {
		t.Fatalf("fetched %d bytes, sha256 differs from the %d-byte file", len(got), len(data))
	}
	res := ts.rec.next(t)
	if res.Outcome != OutcomeOK || res.Bytes != int64(len(data)) || res.BlockSize != 1468 || res.WindowSize != 4 {
		t.Fatalf("result = %+v, want ok, blksize 1468, windowsize 4", res)
	}
	if got := counter(t, ts.reg, "bootfabric_tftp_transfers_total", "probe"); got != 2 {
		t.Errorf("transfers_total{probe} = %v, want 2", got)
	}
	if got := counter(t, ts.reg, "bootfabric_tftp_transfers_total", "ok"); got != 1 {
		t.Errorf("transfers_total{ok} = %v, want 1", got)
	}
}

// TestBusyRefused holds the only transfer slot with a client that never
// acknowledges, and checks that the next request is refused at once.
func TestBusyRefused(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: testfix.RandomBytes(10_000, 3)}}, MaxTransfers: 1, Timeout: 300 * time.Millisecond, Retries: 2})
	_, first := rawRRQ(t, ts.addr, "f", "blksize", "1468")
	parseOACK(t, first) // the slot is now taken until the server gives up
	startRefused := time.Now()
	_, _, err := fetch(ts.addr, "f", 1468, false)
	if err == nil || !strings.Contains(err.Error(), "server busy") {
		t.Fatalf("second transfer: error %v, want server busy", err)
	}
	if d := time.Since(startRefused); d > 2*time.Second {
		t.Errorf("refusal took %v; should be immediate", d)
	}
	var outcomes []Outcome
	for range 2 {
		outcomes = append(outcomes, ts.rec.next(t).Outcome)
	}
	if diff := cmp.Diff([]Outcome{OutcomeRefused, OutcomeTimeout}, outcomes); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s", diff)
	}
	// The slot is released just after OnTransferDone.
	for deadline := time.Now().Add(5 * time.Second); ts.srv.Active() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if _, _, err := fetch(ts.addr, "f", 1468, false); err != nil {
		t.Fatalf("after the slot is freed: %v", err)
	}
}

func TestMalformedDatagrams(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: []byte("data")}}})
	c, err := net.Dial("udp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, p := range [][]byte{{}, {0}, {0, 9, 1, 2}, {0, 1}, {0, 4, 0, 1}, {0, 3, 0, 1, 'x'}, bytes.Repeat([]byte{0xff}, 600)} {
		c.Write(p)
	}
	deadline := time.Now().Add(5 * time.Second)
	for counter(t, ts.reg, "bootfabric_tftp_bad_requests_total", "") < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := counter(t, ts.reg, "bootfabric_tftp_bad_requests_total", ""); got < 4 {
		t.Errorf("bad_requests_total = %v, want at least 4", got)
	}
	if got, _, err := fetch(ts.addr, "f", 0, false); err != nil || string(got) != "data" {
		t.Fatalf("after garbage: %q, %v", got, err)
	}
}

// TestSymlinkEscape serves a directory through os.Root: a link leading out
// of the root is refused, a link inside it works. os.DirFS would follow
// the escaping link, which is why Config.Root should be (*os.Root).FS.
func TestSymlinkEscape(t *testing.T) {
	base := t.TempDir()
	rootDir := filepath.Join(base, "root")
	must(t, os.MkdirAll(filepath.Join(rootDir, "boot"), 0o755))
	must(t, os.WriteFile(filepath.Join(base, "secret"), []byte("outside"), 0o644))
	must(t, os.WriteFile(filepath.Join(rootDir, "boot", "kernel"), []byte("inside"), 0o644))
	must(t, os.Symlink("../secret", filepath.Join(rootDir, "escape")))
	must(t, os.Symlink(filepath.Join(base, "secret"), filepath.Join(rootDir, "escape-abs")))
	must(t, os.Symlink("../../secret", filepath.Join(rootDir, "boot", "up")))
	must(t, os.Symlink("boot/kernel", filepath.Join(rootDir, "inner")))

	if b, err := os.ReadFile(filepath.Join(rootDir, "escape")); err != nil || string(b) != "outside" {
		t.Fatalf("test setup: escape link does not reach the outside file: %q %v", b, err)
	}
	r, err := os.OpenRoot(rootDir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ts := startServer(t, Config{Root: r.FS()})
	for _, name := range []string{"escape", "escape-abs", "boot/up", "/escape"} {
		got, _, err := fetch(ts.addr, name, 1468, true)
		if err == nil {
			t.Errorf("fetch %q through a link out of the root: got %q, want refusal", name, got)
		}
		if res := ts.rec.next(t); res.Outcome != OutcomeNotFound {
			t.Errorf("fetch %q: outcome %s, want not_found", name, res.Outcome)
		}
	}
	got, _, err := fetch(ts.addr, "inner", 1468, true)
	if err != nil || string(got) != "inside" {
		t.Fatalf("link inside the root: %q, %v", got, err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestShutdownStopsTransfers(t *testing.T) {
	ts := startServer(t, Config{Root: fstest.MapFS{"big": {Data: testfix.RandomBytes(50_000_000, 4)}}, Timeout: 200 * time.Millisecond, Retries: 2})
	errc := make(chan error, 1)
	go func() {
		_, _, err := fetch(ts.addr, "big", 512, false)
		errc <- err
	}()
	deadline := time.Now().Add(5 * time.Second)
	for ts.srv.Active() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	ts.stop()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	select {
	case err := <-errc:
		if err == nil {
			t.Error("50 MB transfer at blksize 512 completed before shutdown; want it cut short")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("client did not finish after shutdown")
	}
	if res := ts.rec.next(t); res.Outcome != OutcomeError || !errors.Is(res.Err, errShutdown) {
		t.Errorf("result = %s %v, want error: server shutting down", res.Outcome, res.Err)
	}
}

func TestConcurrentFetches(t *testing.T) {
	files := fstest.MapFS{}
	sums := map[string][32]byte{}
	for i := range 8 {
		b := testfix.RandomBytes(200_000+i*1000, uint64(10+i))
		name := fmt.Sprintf("f%d", i)
		files[name] = &fstest.MapFile{Data: b}
		sums[name] = sha256.Sum256(b)
	}
	ts := startServer(t, Config{Root: files, MaxTransfersPerClient: 32})
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("f%d", i%8)
			got, _, err := fetch(ts.addr, name, 1468, true)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				return
			}
			if sha256.Sum256(got) != sums[name] {
				errs <- fmt.Errorf("%s: sha256 differs", name)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestRetransmissionCounted withholds one ACK so the server sends a block
// again, and checks the result and the metric count it.
func TestRetransmissionCounted(t *testing.T) {
	data := testfix.RandomBytes(3*1468+100, 5)
	// Retries to spare: a test client starved of CPU (-race beside the main run) is late with ACKs.
	ts := startServer(t, Config{Root: fstest.MapFS{"f": {Data: data}}, Timeout: 300 * time.Millisecond, Retries: 10})
	rc, first := rawRRQ(t, ts.addr, "f", "blksize", "1468")
	if diff := cmp.Diff(map[string]string{"blksize": "1468"}, parseOACK(t, first)); diff != "" {
		t.Fatalf("OACK (-want +got):\n%s", diff)
	}
	rc.send(t, []byte{0, 4, 0, 0})
	p1 := rc.read(t) // DATA 1: not acknowledged
	t.Logf("DATA 1: %d bytes", len(p1))
	p1again := rc.read(t)
	if !bytes.Equal(p1, p1again) {
		t.Fatalf("second datagram is not DATA 1 again: % x", p1again[:4])
	}
	var got []byte
	got = append(got, p1[4:]...)
	rc.send(t, []byte{0, 4, 0, 1})
	for blk, n := uint16(2), 0; ; blk, n = blk+1, n+1 {
		p := rc.read(t)
		// On a loaded host the server may resend the previous block before
		// our ACK lands; a client ignores such duplicates.
		for got := binary.BigEndian.Uint16(p[2:]); got == blk-1 && n < 20; got = binary.BigEndian.Uint16(p[2:]) {
			p = rc.read(t)
			n++
		}
		if binary.BigEndian.Uint16(p[2:]) != blk {
			t.Fatalf("want DATA %d, got % x", blk, p[:4])
		}
		got = append(got, p[4:]...)
		rc.send(t, []byte{0, 4, byte(blk >> 8), byte(blk)})
		if len(p)-4 < 1468 {
			break
		}
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("contents differ: got %d bytes, want %d", len(got), len(data))
	}
	res := ts.rec.next(t)
	if res.Outcome != OutcomeOK || res.Retransmissions < 1 {
		t.Fatalf("result %+v, want ok with at least 1 retransmission", res)
	}
	if got := counter(t, ts.reg, "bootfabric_tftp_retransmissions_total", ""); got != float64(res.Retransmissions) {
		t.Errorf("retransmissions_total = %v, want %d", got, res.Retransmissions)
	}
}

func TestServeCancelledAtOnce(t *testing.T) {
	srv, err := New(Config{Root: fstest.MapFS{}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, conn) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve with a cancelled context did not return")
	}
	if err := srv.Serve(context.Background(), conn); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("second Serve: %v, want error", err)
	}
}

// TestServePortClosed closes the port under the request loop: Serve
// returns the error instead of reading a closed socket forever.
func TestServePortClosed(t *testing.T) {
	srv, err := New(Config{Root: fstest.MapFS{}})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(context.Background(), conn) }()
	// A datagram dropped and counted: the loop is reading.
	c, err := net.DialUDP("udp", nil, conn.LocalAddr().(*net.UDPAddr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testfix.WaitFor(t, "the loop reading", 5*time.Second, func() bool {
		c.Write([]byte{0, 4, 0, 1})
		return testutil.ToFloat64(srv.m.badRequests) > 0
	})
	conn.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Serve = %v, want an error wrapping net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its port closed")
	}
}
