package dhcpd

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// Mode selects what the server answers.
type Mode string

const (
	// ModeReservation (also the zero value "") hands out addresses: the
	// reservation's, or the Pool's for MACs without one when a Pool is set.
	// Other MACs get silence.
	ModeReservation Mode = "reservation"
	// ModeProxy is proxyDHCP: PXE/HTTP boot clients get boot options but no
	// address (another DHCP server gives that), on ports 67 and 4011.
	ModeProxy Mode = "proxy"
	// ModeOff answers nothing.
	ModeOff Mode = "off"
)

// Modes are the values of Mode a configuration may name, in the order help texts list them.
func Modes() []Mode { return []Mode{ModeReservation, ModeProxy, ModeOff} }

// ModesText is Modes for a sentence: "reservation, proxy or off".
func ModesText() string {
	m := Modes()
	var b strings.Builder
	for i, v := range m {
		switch {
		case i == len(m)-1 && i > 0:
			b.WriteString(" or ")
		case i > 0:
			b.WriteString(", ")
		}
		b.WriteString(string(v))
	}
	return b.String()
}

// Outcome says what became of one packet; it labels metrics and is passed to
// the Observer.
type Outcome string

// Outcomes.
const (
	OutcomeOffered     Outcome = "offered"      // OFFER sent
	OutcomeAcked       Outcome = "acked"        // ACK sent (REQUEST, INFORM, proxy 4011)
	OutcomeNaked       Outcome = "naked"        // NAK sent
	OutcomeReleased    Outcome = "released"     // RELEASE processed
	OutcomeDeclined    Outcome = "declined"     // DECLINE processed
	OutcomeNotOurs     Outcome = "not_ours"     // MAC owned by another server: silence
	OutcomeOtherServer Outcome = "other_server" // REQUEST names another server id
	OutcomeNotPXE      Outcome = "not_pxe"      // proxy mode, not a boot client
	OutcomeOffNetwork  Outcome = "off_network"  // giaddr or an INFORM's ciaddr on none of our networks: silence
	OutcomeRefused     Outcome = "refused"      // implausible, or past a limit: silence; Decision.Reason says why
	OutcomeIgnored     Outcome = "ignored"      // message type or mode we do not answer
	OutcomeExhausted   Outcome = "exhausted"    // pool full
	OutcomeError       Outcome = "error"        // internal error (lease store, reply build)
	OutcomeMalformed   Outcome = "malformed"    // unparsable packet (server only)
	OutcomeDuplicate   Outcome = "duplicate"    // retransmit of a (MAC, xid, type) still waiting in the queue
	OutcomeQueueFull   Outcome = "queue_full"   // dropped: worker queue full
	OutcomeSuperseded  Outcome = "superseded"   // dropped from the queue: the client has moved past it (server only)
	OutcomeStale       Outcome = "stale"        // dropped from the queue: not repeated for Config.StaleAfter (server only)
	OutcomeSendFailed  Outcome = "send_failed"  // reply built but not sent
)

// Ingress describes where a request arrived.
type Ingress struct {
	// ServerIP is this server's address on the arriving interface (or the
	// configured one): next-server and option 54.
	ServerIP net.IP
	// BootServer is true when the request arrived on the proxyDHCP
	// boot-server socket (port 4011) rather than the DHCP port.
	BootServer bool
	// Attached are the subnets of the server's own addresses (the Server
	// fills it for relayed requests only). A relay never has its giaddr in
	// one of them: clients there reach the server without a relay.
	Attached []netip.Prefix
}

// Decision is the result of handling one request. Reply nil means silence.
type Decision struct {
	Reply   *dhcpv4.DHCPv4
	Outcome Outcome
	// IP is the address offered, acknowledged, released or declined.
	IP net.IP
	// Node is the client's name (its reservation's host name) when known: for logs.
	Node string
	// Reason says why a request was refused (OutcomeRefused) or NAKed for a
	// limit: the reason label of bootfabric_dhcp_refused_total. "" otherwise.
	Reason string
	Err    error
}

// Refusal reasons (Decision.Reason) besides "giaddr_" and "ciaddr_" followed
// by what makes the address no host's (hostProblem, subnetEdge).
const (
	// ReasonGiaddrSelf: the giaddr is the server's own address.
	ReasonGiaddrSelf = "giaddr_self"
	// ReasonGiaddrAttached: the giaddr lies in a subnet the server is
	// attached to (Ingress.Attached).
	ReasonGiaddrAttached = "giaddr_attached"
	// ReasonCiaddrNotLeased: an INFORM's ciaddr is neither the client's
	// reserved address nor one it holds a pool lease on.
	ReasonCiaddrNotLeased = "ciaddr_not_leased"
	// ReasonPoolShare: a client the pool limits (PoolOptions.Limited) asked
	// for an address while its kind already holds its whole share.
	ReasonPoolShare = "pool_share"
)

// Handler makes the per-packet decisions; it owns no sockets. Safe for
// concurrent use.
type Handler struct {
	mode      Mode
	boot      BootConfig
	res       Reservations
	pool      AddressPool
	poolOK    func(net.HardwareAddr) bool
	poolNet   Reservation
	networks  []netip.Prefix
	leaseTime time.Duration
}

// NewHandler builds the decision logic from the non-socket fields of cfg.
func NewHandler(cfg Config) *Handler {
	h := &Handler{mode: cfg.Mode, boot: cfg.Boot.withDefaults(), res: cfg.Reservations, pool: cfg.Pool, poolOK: cfg.PoolAllowed, poolNet: cfg.PoolNetwork, networks: cfg.Networks, leaseTime: cfg.LeaseTime}
	if h.mode == "" {
		h.mode = ModeReservation
	}
	if h.leaseTime <= 0 && cfg.Pool != nil {
		h.leaseTime = cfg.Pool.LeaseTime()
	}
	if h.leaseTime <= 0 {
		h.leaseTime = time.Hour
	}
	return h
}

// PXEPort is the proxyDHCP boot-server port.
const PXEPort = 4011

// Handle decides the answer to req. It never panics on any parsed packet.
func (h *Handler) Handle(ctx context.Context, req *dhcpv4.DHCPv4, in Ingress) Decision {
	if req.OpCode != dhcpv4.OpcodeBootRequest || len(req.ClientHWAddr) == 0 {
		return Decision{Outcome: OutcomeIgnored}
	}
	if h.mode == ModeOff {
		return Decision{Outcome: OutcomeIgnored}
	}
	// RFC 2131 4.1: a reply to a relayed request goes to giaddr, port 67. A
	// giaddr no relay can have would make the server send to a host (or a
	// whole subnet) that asked for nothing: refuse it whoever the client is.
	if gi := req.GatewayIPAddr; !unspecified(gi) {
		if reason := h.relayProblem(gi, in); reason != "" {
			return Decision{Outcome: OutcomeRefused, Reason: reason, IP: gi}
		}
	}
	if h.mode == ModeProxy {
		return h.handleProxy(req, in)
	}
	return h.handleReservation(ctx, req, in)
}

// relayProblem says why gi cannot be a relay agent's address ("" when it
// can): not one host's unicast address, the server's own, inside a subnet
// the server is attached to, or the network or broadcast address of one of
// the server's networks.
func (h *Handler) relayProblem(gi net.IP, in Ingress) string {
	a, _ := netip.AddrFromSlice(gi.To4())
	if p := hostProblem(a); p != "" {
		return "giaddr_" + p
	}
	if sip, ok := netip.AddrFromSlice(in.ServerIP.To4()); ok && sip == a {
		return ReasonGiaddrSelf
	}
	for _, p := range in.Attached {
		if p.Contains(a) {
			return ReasonGiaddrAttached
		}
	}
	for _, p := range h.networks {
		if e := subnetEdge(a, p); e != "" {
			return "giaddr_" + e
		}
	}
	return ""
}

// hostProblem says why a cannot be one host's unicast IPv4 address ("" when
// it can): unspecified, this network (0/8), limited broadcast, multicast,
// loopback, link-local or reserved (240/4).
func hostProblem(a netip.Addr) string {
	switch {
	case !a.Is4():
		return "not_ipv4"
	case a.IsUnspecified():
		return "unspecified"
	case a == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		return "broadcast"
	case a.IsMulticast():
		return "multicast"
	case a.IsLoopback():
		return "loopback"
	case a.IsLinkLocalUnicast():
		return "link_local"
	case a.As4()[0] == 0:
		return "this_network"
	case a.As4()[0] >= 240:
		return "reserved"
	}
	return ""
}

// subnetEdge says whether a is the network ("network_address") or the
// broadcast address ("broadcast") of p, whose hosts exclude both (/30 and
// wider); "" otherwise.
func subnetEdge(a netip.Addr, p netip.Prefix) string {
	if !p.Addr().Is4() || p.Bits() > 30 || !p.Contains(a) {
		return ""
	}
	p = p.Masked()
	if a == p.Addr() {
		return "network_address"
	}
	b := p.Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	last := (uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])) | host
	if a == netip.AddrFrom4([4]byte{byte(last >> 24), byte(last >> 16), byte(last >> 8), byte(last)}) {
		return "broadcast"
	}
	return ""
}

// resPrefix is the network of a reservation's address, when it has one.
func resPrefix(res Reservation) (netip.Prefix, bool) {
	a, ok := netip.AddrFromSlice(res.IP.To4())
	if !ok || len(res.Mask) != net.IPv4len {
		return netip.Prefix{}, false
	}
	ones, bits := res.Mask.Size()
	if bits != 32 {
		return netip.Prefix{}, false
	}
	return netip.PrefixFrom(a, ones).Masked(), true
}

// client is what the handler knows of a client in reservation mode.
type client struct {
	mac      net.HardwareAddr
	res      Reservation // its reservation, or the pool's network without a name
	reserved bool
	// pooled: the address comes from the Pool, for a MAC without a
	// reservation or with a reservation that names no address (a known node
	// that keeps its host name and options).
	pooled bool
	// lease is the lease time given: the server's, whatever the client asks
	// for (option 51 is a wish, RFC 2131 4.3.1).
	lease time.Duration
}

// lookup finds the client of mac; false when this server does not own it.
func (h *Handler) lookup(mac net.HardwareAddr) (client, bool) {
	c := client{mac: mac, lease: h.leaseTime}
	if h.res != nil {
		c.res, c.reserved = h.res.Lookup(mac)
	}
	if !c.reserved && (h.pool == nil || (h.poolOK != nil && !h.poolOK(mac))) {
		return client{}, false
	}
	c.pooled = !c.reserved || (c.res.IP == nil && h.pool != nil)
	if c.pooled {
		c.lease = h.pool.LeaseTime()
	}
	if !c.reserved {
		c.res = h.poolNet
		c.res.IP, c.res.Name = nil, ""
	}
	return c, true
}

// handleReservation answers a client this server may give an address to:
// one with a reservation, or any the Pool may serve.
func (h *Handler) handleReservation(ctx context.Context, req *dhcpv4.DHCPv4, in Ingress) Decision {
	c, ok := h.lookup(req.ClientHWAddr)
	if !ok {
		return Decision{Outcome: OutcomeNotOurs}
	}
	if gi := req.GatewayIPAddr; !unspecified(gi) {
		if !h.onNetwork(gi, c.res) {
			return Decision{Outcome: OutcomeOffNetwork, IP: gi}
		}
		if p, ok := resPrefix(c.res); ok {
			a, _ := netip.AddrFromSlice(gi.To4())
			if e := subnetEdge(a, p); e != "" {
				return Decision{Outcome: OutcomeRefused, Reason: "giaddr_" + e, IP: gi}
			}
		}
	}
	switch req.MessageType() {
	case dhcpv4.MessageTypeDiscover:
		return h.discover(ctx, req, in, c)
	case dhcpv4.MessageTypeRequest:
		return h.request(ctx, req, in, c)
	case dhcpv4.MessageTypeRelease, dhcpv4.MessageTypeDecline:
		return h.release(ctx, req, c)
	case dhcpv4.MessageTypeInform:
		return h.inform(ctx, req, in, c)
	}
	return Decision{Outcome: OutcomeIgnored}
}

// discover offers the client its reserved address, or one from the Pool.
func (h *Handler) discover(ctx context.Context, req *dhcpv4.DHCPv4, in Ingress, c client) Decision {
	if c.pooled {
		ip, err := h.pool.Offer(ctx, c.mac, req.RequestedIPAddress())
		if errors.Is(err, ErrPoolExhausted) {
			return Decision{Outcome: OutcomeExhausted, Err: err}
		}
		if errors.Is(err, ErrPoolShare) {
			return Decision{Outcome: OutcomeRefused, Reason: ReasonPoolShare}
		}
		if err != nil {
			return Decision{Outcome: OutcomeError, Err: err}
		}
		c.res.IP = ip
	}
	return h.reply(req, in, dhcpv4.MessageTypeOffer, c.res, c.lease, OutcomeOffered)
}

// request acknowledges the address the client asks for (option 50, or
// ciaddr when renewing or rebinding) when it is the client's, and refuses it
// with a NAK otherwise.
func (h *Handler) request(ctx context.Context, req *dhcpv4.DHCPv4, in Ingress, c client) Decision {
	if sid := req.ServerIdentifier(); sid != nil && !sid.Equal(in.ServerIP) {
		// The client chose another server's offer. A pool offer simply
		// expires after OfferTime.
		return Decision{Outcome: OutcomeOtherServer}
	}
	want := req.RequestedIPAddress()
	if want == nil || want.IsUnspecified() {
		want = req.ClientIPAddr // RENEWING / REBINDING
	}
	if want == nil || want.IsUnspecified() {
		return h.reply(req, in, dhcpv4.MessageTypeNak, Reservation{}, 0, OutcomeNaked)
	}
	if c.pooled {
		return h.requestPooled(ctx, req, in, c, want)
	}
	if !want.Equal(c.res.IP) {
		return h.nak(req, in, want)
	}
	return h.reply(req, in, dhcpv4.MessageTypeAck, c.res, c.lease, OutcomeAcked)
}

// requestPooled binds want to the client in the Pool and acknowledges it
// for what is left of the lease.
func (h *Handler) requestPooled(ctx context.Context, req *dhcpv4.DHCPv4, in Ingress, c client, want net.IP) Decision {
	left, err := h.pool.CommitLease(ctx, c.mac, want)
	switch {
	case errors.Is(err, ErrNotOwned), errors.Is(err, ErrNotInPool):
		return h.nak(req, in, want)
	case errors.Is(err, ErrPoolShare):
		// A NAK, not silence: the client starts again with a DISCOVER
		// rather than retrying a REQUEST that cannot succeed.
		d := h.nak(req, in, want)
		d.Reason = ReasonPoolShare
		return d
	case err != nil:
		return Decision{Outcome: OutcomeError, Err: err}
	}
	c.res.IP = want
	// The lease's true remaining time: less than the full lease when the
	// pool answered from a lease it had already written.
	lease := c.lease
	if left = left.Round(time.Second); left < lease {
		lease = max(left, time.Second)
	}
	return h.reply(req, in, dhcpv4.MessageTypeAck, c.res, lease, OutcomeAcked)
}

// nak refuses the address want.
func (h *Handler) nak(req *dhcpv4.DHCPv4, in Ingress, want net.IP) Decision {
	d := h.reply(req, in, dhcpv4.MessageTypeNak, Reservation{}, 0, OutcomeNaked)
	d.IP = want
	return d
}

// release takes back a released (ciaddr) or declined (option 50) pool
// address; a reserved address stays the client's. Neither gets an answer.
func (h *Handler) release(ctx context.Context, req *dhcpv4.DHCPv4, c client) Decision {
	ip, out := req.ClientIPAddr, OutcomeReleased
	if req.MessageType() == dhcpv4.MessageTypeDecline {
		ip, out = req.RequestedIPAddress(), OutcomeDeclined
	}
	if !c.pooled || ip == nil {
		return Decision{Outcome: out, IP: ip}
	}
	give := h.pool.Release
	if out == OutcomeDeclined {
		give = h.pool.Decline
	}
	if err := give(ctx, c.mac, ip); err != nil {
		return Decision{Outcome: OutcomeError, IP: ip, Err: err}
	}
	return Decision{Outcome: out, IP: ip}
}

// inform answers a client that has its address already with its options,
// sent to ciaddr (RFC 2131 3.4): only when ciaddr is a host address of one
// of our networks and the client's own, its reservation or a pool lease it
// holds. Otherwise anyone could make the server send to any address there,
// its broadcast address included.
func (h *Handler) inform(ctx context.Context, req *dhcpv4.DHCPv4, in Ingress, c client) Decision {
	ci := req.ClientIPAddr
	if unspecified(ci) || !h.onNetwork(ci, c.res) {
		return Decision{Outcome: OutcomeOffNetwork, IP: ci}
	}
	a, _ := netip.AddrFromSlice(ci.To4())
	if p := hostProblem(a); p != "" {
		return Decision{Outcome: OutcomeRefused, Reason: "ciaddr_" + p, IP: ci}
	}
	if e := h.edgeOfNetwork(a, c.res); e != "" {
		return Decision{Outcome: OutcomeRefused, Reason: "ciaddr_" + e, IP: ci}
	}
	if c.pooled {
		held, err := h.pool.Holds(ctx, c.mac, ci)
		if err != nil {
			return Decision{Outcome: OutcomeError, IP: ci, Err: err}
		}
		if !held {
			return Decision{Outcome: OutcomeRefused, Reason: ReasonCiaddrNotLeased, IP: ci}
		}
	} else if !ci.Equal(c.res.IP) {
		return Decision{Outcome: OutcomeRefused, Reason: ReasonCiaddrNotLeased, IP: ci}
	}
	c.res.IP = nil // RFC 2131 3.4: no yiaddr, no lease time
	return h.reply(req, in, dhcpv4.MessageTypeAck, c.res, 0, OutcomeAcked)
}

// edgeOfNetwork says whether a is the network or broadcast address of one of
// the server's networks or of the client's reserved address (see subnetEdge).
func (h *Handler) edgeOfNetwork(a netip.Addr, res Reservation) string {
	for _, p := range h.networks {
		if e := subnetEdge(a, p); e != "" {
			return e
		}
	}
	if p, ok := resPrefix(res); ok {
		return subnetEdge(a, p)
	}
	return ""
}

// onNetwork reports whether a lies in one of the server's networks or in
// the network of the client's reserved address.
func (h *Handler) onNetwork(a net.IP, res Reservation) bool {
	addr, ok := netip.AddrFromSlice(a.To4())
	if !ok {
		return false
	}
	for _, p := range h.networks {
		if p.Contains(addr) {
			return true
		}
	}
	if ip4, mask := res.IP.To4(), net.IPMask(res.Mask); ip4 != nil && len(mask) == net.IPv4len {
		return ip4.Mask(mask).Equal(a.To4().Mask(mask))
	}
	return false
}

// handleProxy answers PXE/HTTP boot clients with boot options only: OFFER to
// DISCOVER on port 67, ACK to REQUEST on port 4011.
func (h *Handler) handleProxy(req *dhcpv4.DHCPv4, in Ingress) Decision {
	vc := req.ClassIdentifier()
	if !strings.HasPrefix(vc, VendorPXEClient) && !strings.HasPrefix(vc, VendorHTTPClient) {
		return Decision{Outcome: OutcomeNotPXE}
	}
	var res Reservation
	if h.res != nil {
		r, ok := h.res.Lookup(req.ClientHWAddr)
		if !ok {
			return Decision{Outcome: OutcomeNotOurs}
		}
		res = Reservation{Name: r.Name} // the address comes from the real DHCP server
	}
	mt := req.MessageType()
	switch {
	case mt == dhcpv4.MessageTypeDiscover && !in.BootServer:
		return h.reply(req, in, dhcpv4.MessageTypeOffer, res, 0, OutcomeOffered)
	case (mt == dhcpv4.MessageTypeRequest || mt == dhcpv4.MessageTypeInform) && in.BootServer:
		return h.reply(req, in, dhcpv4.MessageTypeAck, res, 0, OutcomeAcked)
	}
	return Decision{Outcome: OutcomeIgnored}
}

func (h *Handler) reply(req *dhcpv4.DHCPv4, in Ingress, t dhcpv4.MessageType, res Reservation, lease time.Duration, out Outcome) Decision {
	var boot BootChoice
	if t != dhcpv4.MessageTypeNak {
		boot = Classify(req, h.boot, in.ServerIP, res.Name)
	}
	resp, err := BuildReply(req, ReplyParams{Type: t, Reservation: res, Server: Identity{ServerIP: in.ServerIP}, Boot: boot, LeaseTime: lease})
	if err != nil {
		return Decision{Outcome: OutcomeError, Err: err}
	}
	return Decision{Reply: resp, Outcome: out, IP: res.IP, Node: res.Name}
}
