package dhcpd

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/dhcpv4/nclient4"
	"github.com/insomniacslk/dhcp/iana"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap/zaptest"
)

type event struct {
	MAC     string
	Type    string
	Outcome Outcome
	IP      string
}

type recorder struct {
	mu     sync.Mutex
	events []event
}

func (r *recorder) OnDHCP(mac net.HardwareAddr, t dhcpv4.MessageType, o Outcome, ip net.IP, _ ClientKind) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := event{MAC: mac.String(), Type: t.String(), Outcome: o}
	if ip != nil {
		e.IP = ip.String()
	}
	r.events = append(r.events, e)
}

func (r *recorder) get() []event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]event(nil), r.events...)
}

// startServer runs a server on an ephemeral loopback port until the test ends.
func startServer(t *testing.T, cfg Config) (*Server, *net.UDPAddr) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Listen(context.Background()); err != nil {
		t.Fatal(err)
	}
	testfix.Run(t, "Serve", s.Serve)
	return s, s.LocalAddrs()[0]
}

func newClient(t *testing.T, srv *net.UDPAddr, hw net.HardwareAddr) *nclient4.Client {
	t.Helper()
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := nclient4.NewWithConn(conn, hw, nclient4.WithServerAddr(srv),
		nclient4.WithTimeout(300*time.Millisecond), nclient4.WithRetry(2))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestServerLoopbackDORA(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := &recorder{}
	_, addr := startServer(t, Config{
		Reservations: StaticReservations{macKey(testMAC): testRes},
		Boot:         BootConfig{HTTPPort: 8080},
		Registerer:   reg, Observer: rec,
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	c := newClient(t, addr, testMAC)
	lease, err := c.Request(ctx, vendor("PXEClient:Arch:00007:UNDI:003016"), arch(iana.EFI_X86_64))
	if err != nil {
		t.Fatal(err)
	}
	got := []string{lease.ACK.YourIPAddr.String(), lease.ACK.ServerIPAddr.String(), lease.ACK.BootFileNameOption(),
		lease.ACK.HostName(), lease.ACK.ServerIdentifier().String(), lease.ACK.ClassIdentifier()}
	want := []string{"10.0.0.17", "127.0.0.1", "ipxe.efi", "node-7", "127.0.0.1", "PXEClient"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ACK (-want +got):\n%s", diff)
	}

	// iPXE then gets its script URL and option 175.176.
	lease, err = c.Request(ctx, vendor("PXEClient:Arch:00007"), arch(iana.EFI_X86_64), generic(77, []byte("iPXE")))
	if err != nil {
		t.Fatal(err)
	}
	if f := lease.ACK.BootFileNameOption(); f != "http://127.0.0.1:8080/ipxe/52:54:00:12:34:56" {
		t.Errorf("iPXE boot file %q", f)
	}
	if o := lease.ACK.Options.Get(optIPXEEncap); !cmp.Equal(o, []byte{176, 1, 1}) {
		t.Errorf("option 175 = %v, want [176 1 1]", o)
	}

	// An unknown MAC gets silence.
	if _, err := newClient(t, addr, otherMAC).DiscoverOffer(ctx); err == nil {
		t.Error("unknown MAC got an offer")
	}

	wantEvents := []event{
		{"52:54:00:12:34:56", "DISCOVER", OutcomeOffered, "10.0.0.17"},
		{"52:54:00:12:34:56", "REQUEST", OutcomeAcked, "10.0.0.17"},
		{"52:54:00:12:34:56", "DISCOVER", OutcomeOffered, "10.0.0.17"},
		{"52:54:00:12:34:56", "REQUEST", OutcomeAcked, "10.0.0.17"},
	}
	evs := rec.get()
	if len(evs) < 4 {
		t.Fatalf("observer saw %d events: %v", len(evs), evs)
	}
	if diff := cmp.Diff(wantEvents, evs[:4]); diff != "" {
		t.Errorf("observer (-want +got):\n%s", diff)
	}
	for _, e := range evs[4:] {
		if e.Outcome != OutcomeNotOurs {
			t.Errorf("unknown MAC event %v, want not_ours", e)
		}
	}
	if n := testutil.ToFloat64(packetsCounter(t, reg, "DISCOVER", "offered")); n != 2 {
		t.Errorf("packets{DISCOVER,offered} = %v, want 2", n)
	}
	if n := testutil.CollectAndCount(reg, "bootfabric_dhcp_handler_seconds"); n != 1 {
		t.Errorf("latency histogram count %d", n)
	}
}

// packetsCounter returns the packets counter child registered in reg.
func packetsCounter(t *testing.T, reg *prometheus.Registry, typ, outcome string) prometheus.Collector {
	t.Helper()
	m, err := newMetrics(reg) // returns the already registered collectors
	if err != nil {
		t.Fatal(err)
	}
	return m.packets.WithLabelValues(typ, outcome)
}

func TestServerSurvivesMalformed(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, addr := startServer(t, Config{Reservations: StaticReservations{macKey(testMAC): testRes}, Registerer: reg})
	conn, err := net.DialUDP("udp4", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	good := discover(t).ToBytes()
	reply := discover(t, func(d *dhcpv4.DHCPv4) { d.OpCode = dhcpv4.OpcodeBootReply }).ToBytes()
	noType := discover(t, dhcpv4.WithoutOption(dhcpv4.OptionDHCPMessageType)).ToBytes()
	bad := [][]byte{{}, {1}, good[:100], good[:240], append(good[:236:236], 1, 2, 3, 4), reply, noType,
		append(append([]byte(nil), good[:240]...), 53, 200)}
	for _, b := range bad {
		if _, err := conn.Write(b); err != nil && len(b) > 0 {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := newClient(t, addr, testMAC).Request(ctx); err != nil {
		t.Fatalf("server stopped answering after malformed packets: %v", err)
	}
	m, _ := newMetrics(reg)
	if n := testutil.ToFloat64(m.drops.WithLabelValues("malformed")); n < 6 {
		t.Errorf("malformed drops = %v, want >= 6", n)
	}
}

func TestServerRefusesPortInUse(t *testing.T) {
	_, addr := startServer(t, Config{})
	s2, err := New(Config{Addr: addr.String()})
	if err != nil {
		t.Fatal(err)
	}
	err = s2.Serve(context.Background())
	if !errors.Is(err, ErrPortInUse) {
		t.Fatalf("second server on %v: err = %v, want ErrPortInUse", addr, err)
	}
	t.Logf("error shown to the user: %v", err)
}

func TestServerProxyLoopback(t *testing.T) {
	s, addr := startServer(t, Config{Mode: ModeProxy, ProxyAddr: "127.0.0.1:0",
		Reservations: StaticReservations{macKey(testMAC): testRes}})
	boot := s.LocalAddrs()[1]
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	pxe := []dhcpv4.Modifier{vendor("PXEClient:Arch:00000:UNDI:002001"), arch(iana.INTEL_X86PC)}
	offer, err := newClient(t, addr, testMAC).DiscoverOffer(ctx, pxe...)
	if err != nil {
		t.Fatal(err)
	}
	if !offer.YourIPAddr.IsUnspecified() || offer.BootFileNameOption() != "undionly.kpxe" || offer.ClassIdentifier() != "PXEClient" {
		t.Errorf("proxy offer: yiaddr %v file %q class %q", offer.YourIPAddr, offer.BootFileNameOption(), offer.ClassIdentifier())
	}
	if offer.Options.Has(dhcpv4.OptionIPAddressLeaseTime) {
		t.Error("proxy offer carries a lease time")
	}
	// Boot server request on the 4011 socket.
	c := newClient(t, boot, testMAC)
	req, err := dhcpv4.NewRequestFromOffer(offer, pxe...)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := c.SendAndRead(ctx, boot, req, nclient4.IsMessageType(dhcpv4.MessageTypeAck))
	if err != nil {
		t.Fatal(err)
	}
	if ack.BootFileNameOption() != "undionly.kpxe" {
		t.Errorf("4011 ACK boot file %q", ack.BootFileNameOption())
	}
}

func TestServerStopsOnCancel(t *testing.T) {
	s, err := New(Config{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	// Cancelled once Serve listens, so that it is the running server that stops and frees the port.
	testfix.WaitFor(t, "Serve listening", 5*time.Second, func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.conns) > 0
	})
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	// The port is free again.
	if err := s.Listen(context.Background()); err != nil {
		t.Fatalf("re-listen: %v", err)
	}
	for _, c := range s.conns {
		c.raw.Close()
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"mode":      {Mode: "dynamic"},
		"server ip": {ServerIP: net.ParseIP("::1")},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestDedup checks that a retransmit of a (MAC, xid, type) still in the
// queue is dropped, that a new type or xid is not, that a retransmit is
// queued again as soon as a worker has taken the first copy (its answer may
// be lost), and that a full queue drops.
func TestDedup(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, err := New(Config{QueueSize: 3, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	queue := newJobQueue(3, -1)
	l := &listener{}
	send := func(d *dhcpv4.DHCPv4) { s.enqueue(d.ToBytes(), nil, &net.UDPAddr{}, l, time.Now(), queue) }

	d1 := discover(t)
	send(d1)
	send(d1) // retransmit while the first copy waits: dropped
	r1 := request(t, testMAC, dhcpv4.MessageTypeRequest, dhcpv4.WithTransactionID(d1.TransactionID))
	send(r1) // same xid, other type: queued
	d2 := request(t, otherMAC, dhcpv4.MessageTypeDiscover)
	send(d2) // other client: queued
	d3 := request(t, mac(3), dhcpv4.MessageTypeDiscover)
	send(d3) // queue full of what goes first or came first: dropped
	if n := queue.len(); n != 3 {
		t.Fatalf("queue has %d jobs, want 3", n)
	}
	j, ok := queue.pop(context.Background(), time.Now, func(d dropped) { t.Errorf("dropped %v", d.why) })
	if !ok || j.key.mt != dhcpv4.MessageTypeRequest {
		t.Fatalf("first job taken: %v %v, want the REQUEST", ok, j.key.mt)
	}
	send(r1) // a worker took it: a retransmit is queued although the first is not answered yet
	if n := queue.len(); n != 3 {
		t.Errorf("after a worker took the first copy, its retransmit was not queued (queue %d)", n)
	}
	m, _ := newMetrics(reg)
	got := []float64{testutil.ToFloat64(m.drops.WithLabelValues("duplicate")), testutil.ToFloat64(m.drops.WithLabelValues("queue_full"))}
	if diff := cmp.Diff([]float64{1, 1}, got); diff != "" {
		t.Errorf("drops [duplicate queue_full] (-want +got):\n%s", diff)
	}
}

// blockingObserver holds the worker that handles the first request until release is closed: a
// reply that is slow to leave, as under a storm.
type blockingObserver struct {
	once    sync.Once
	started chan struct{}
	release chan struct{}
}

func (o *blockingObserver) OnDHCP(net.HardwareAddr, dhcpv4.MessageType, Outcome, net.IP, ClientKind) {
	first := false
	o.once.Do(func() { first = true })
	if first {
		close(o.started)
		<-o.release
	}
}

// TestRetransmitWhileHandled checks that a retransmit arriving while a worker is still handling the
// first copy is answered too (the first answer may be the one that gets lost), with the same offer.
func TestRetransmitWhileHandled(t *testing.T) {
	obs := &blockingObserver{started: make(chan struct{}), release: make(chan struct{})}
	reg := prometheus.NewRegistry()
	_, addr := startServer(t, Config{Reservations: StaticReservations{macKey(testMAC): testRes}, Observer: obs, Registerer: reg})
	conn, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	d := discover(t)
	for i := 0; i < 2; i++ {
		if _, err := conn.WriteTo(d.ToBytes(), addr); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			select {
			case <-obs.started:
			case <-time.After(5 * time.Second):
				t.Fatal("the first DISCOVER was not handled")
			}
		}
	}
	close(obs.release)
	var got []string
	buf := make([]byte, 1500)
	for len(got) < 2 {
		_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("after %d replies: %v", len(got), err)
		}
		r, err := dhcpv4.FromBytes(buf[:n])
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, r.MessageType().String()+" "+r.YourIPAddr.String())
	}
	if diff := cmp.Diff([]string{"OFFER 10.0.0.17", "OFFER 10.0.0.17"}, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	m, _ := newMetrics(reg)
	if d := testutil.ToFloat64(m.drops.WithLabelValues("duplicate")); d != 0 {
		t.Errorf("%v retransmits dropped as duplicates", d)
	}
}

// holdingRecorder records every handled request, and holds the worker that handles the first one
// until release is closed.
type holdingRecorder struct {
	recorder
	blockingObserver
}

func (h *holdingRecorder) OnDHCP(mac net.HardwareAddr, t dhcpv4.MessageType, o Outcome, ip net.IP, k ClientKind) {
	h.recorder.OnDHCP(mac, t, o, ip, k)
	h.blockingObserver.OnDHCP(mac, t, o, ip, k)
}

// heldServer starts a one-worker server whose worker is held by a DISCOVER from mac(100), and
// returns it with a function sending packets to it.
func heldServer(t *testing.T, cfg Config) (*holdingRecorder, *metrics, func(*dhcpv4.DHCPv4)) {
	t.Helper()
	obs := &holdingRecorder{blockingObserver: blockingObserver{started: make(chan struct{}), release: make(chan struct{})}}
	reg := prometheus.NewRegistry()
	cfg.Workers, cfg.Observer, cfg.Registerer = 1, obs, reg
	cfg.Reservations = StaticReservations{macKey(testMAC): testRes}
	_, addr := startServer(t, cfg)
	m, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialUDP("udp4", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	send := func(d *dhcpv4.DHCPv4) {
		if _, err := conn.Write(d.ToBytes()); err != nil {
			t.Fatal(err)
		}
	}
	send(request(t, mac(100), dhcpv4.MessageTypeDiscover))
	select {
	case <-obs.started:
	case <-time.After(5 * time.Second):
		t.Fatal("the first DISCOVER was not handled")
	}
	return obs, m, send
}

// TestServerAnswersRequestsFirst checks the queue's order under a backlog: with the only worker
// held, DISCOVERs from five clients, then a REQUEST, then a DISCOVER and REQUEST from one more
// client arrive. The REQUESTs are answered first (a REQUEST finishes an exchange, a DISCOVER only
// starts one), the DISCOVER whose client already REQUESTs is dropped as superseded, and the other
// DISCOVERs are answered in their order.
func TestServerAnswersRequestsFirst(t *testing.T) {
	obs, m, send := heldServer(t, Config{})
	for i := 1; i <= 5; i++ {
		send(request(t, mac(i), dhcpv4.MessageTypeDiscover))
	}
	send(request(t, testMAC, dhcpv4.MessageTypeRequest))
	d7 := request(t, mac(7), dhcpv4.MessageTypeDiscover)
	send(d7)
	send(request(t, mac(7), dhcpv4.MessageTypeRequest, dhcpv4.WithTransactionID(d7.TransactionID)))
	testfix.WaitFor(t, "8 requests queued", 5*time.Second, func() bool { return testutil.ToFloat64(m.queue) == 8 })
	close(obs.release)
	testfix.WaitFor(t, "7 requests handled and 1 dropped", 5*time.Second, func() bool {
		return len(obs.get()) == 8 && testutil.ToFloat64(m.drops.WithLabelValues("superseded")) == 1
	})
	var got []string
	for _, e := range obs.get()[1:] {
		got = append(got, e.Type+" "+e.MAC)
	}
	want := []string{"REQUEST " + testMAC.String(), "REQUEST " + mac(7).String()}
	for i := 1; i <= 5; i++ {
		want = append(want, "DISCOVER "+mac(i).String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("handled after the held one (-want +got):\n%s", diff)
	}
	if n := testutil.CollectAndCount(m.queueWait); n != 2 {
		t.Errorf("queue wait recorded for %d queues, want 2 (request, discover)", n)
	}
	if n := testutil.ToFloat64(m.queue); n != 0 {
		t.Errorf("queue length %v after the queue emptied", n)
	}
}

// TestServerDropsStale checks that requests nobody repeated for StaleAfter are dropped unanswered
// and counted, and that one repeated meanwhile is answered.
func TestServerDropsStale(t *testing.T) {
	const staleAfter = 200 * time.Millisecond
	obs, m, send := heldServer(t, Config{StaleAfter: staleAfter})
	sent := time.Now()
	d2 := request(t, mac(2), dhcpv4.MessageTypeDiscover)
	for _, d := range []*dhcpv4.DHCPv4{request(t, mac(1), dhcpv4.MessageTypeDiscover), d2, request(t, mac(3), dhcpv4.MessageTypeRequest)} {
		send(d)
	}
	testfix.WaitFor(t, "3 requests queued", 5*time.Second, func() bool { return testutil.ToFloat64(m.queue) == 3 })
	testfix.WaitFor(t, "StaleAfter past", 5*time.Second, func() bool { return time.Since(sent) > staleAfter })
	send(d2) // its client repeats it: fresh again
	testfix.WaitFor(t, "the retransmit seen", 5*time.Second, func() bool {
		return testutil.ToFloat64(m.drops.WithLabelValues("duplicate")) == 1
	})
	close(obs.release)
	testfix.WaitFor(t, "2 stale requests dropped", 5*time.Second, func() bool {
		return testutil.ToFloat64(m.drops.WithLabelValues("stale")) == 2 && len(obs.get()) == 2
	})
	if e := obs.get()[1]; e.MAC != mac(2).String() || e.Type != "DISCOVER" {
		t.Errorf("answered %v, want the DISCOVER repeated meanwhile", e)
	}
	got := []float64{testutil.ToFloat64(m.packets.WithLabelValues("DISCOVER", "stale")), testutil.ToFloat64(m.packets.WithLabelValues("REQUEST", "stale"))}
	if diff := cmp.Diff([]float64{1, 1}, got); diff != "" {
		t.Errorf("packets [DISCOVER REQUEST]{outcome=stale} (-want +got):\n%s", diff)
	}
}
