package dhcpd

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// Identity is how this server names itself in replies.
type Identity struct {
	// ServerIP goes into siaddr (next-server), option 54 and option 66.
	ServerIP net.IP
}

// ReplyParams is everything BuildReply needs besides the request.
type ReplyParams struct {
	// Type is MessageTypeOffer, MessageTypeAck or MessageTypeNak.
	Type dhcpv4.MessageType
	// Reservation gives yiaddr and the network options; its IP is nil in
	// proxy mode and for ACKs to INFORM.
	Reservation Reservation
	Server      Identity
	Boot        BootChoice
	// LeaseTime is option 51; zero leaves it out (proxyDHCP, INFORM).
	LeaseTime time.Duration
}

// BuildReply builds an OFFER, ACK or NAK answering req. It is pure: the same
// inputs give the same packet.
func BuildReply(req *dhcpv4.DHCPv4, p ReplyParams) (*dhcpv4.DHCPv4, error) {
	if req == nil {
		return nil, errors.New("dhcpd: build reply: nil request")
	}
	sid := p.Server.ServerIP.To4()
	if sid == nil {
		return nil, fmt.Errorf("dhcpd: build reply: server IP %v is not IPv4", p.Server.ServerIP)
	}
	switch p.Type {
	case dhcpv4.MessageTypeNak:
		resp := newReply(req,
			dhcpv4.WithMessageType(dhcpv4.MessageTypeNak),
			dhcpv4.WithOption(dhcpv4.OptServerIdentifier(sid)),
		)
		// RFC 2131 4.3.2: a NAK through a relay asks it to broadcast.
		if !req.GatewayIPAddr.IsUnspecified() && req.GatewayIPAddr != nil {
			resp.SetBroadcast()
		}
		return resp, nil
	case dhcpv4.MessageTypeOffer, dhcpv4.MessageTypeAck:
	default:
		return nil, fmt.Errorf("dhcpd: build reply: unsupported message type %v", p.Type)
	}

	r := p.Reservation
	mods := []dhcpv4.Modifier{
		dhcpv4.WithMessageType(p.Type),
		dhcpv4.WithServerIP(sid),
		dhcpv4.WithOption(dhcpv4.OptServerIdentifier(sid)),
	}
	if ip := r.IP.To4(); ip != nil {
		mods = append(mods, dhcpv4.WithYourIP(ip))
	}
	if req.MessageType() == dhcpv4.MessageTypeInform {
		mods = append(mods, dhcpv4.WithClientIP(req.ClientIPAddr))
	}
	if len(r.Mask) == 4 {
		mods = append(mods, dhcpv4.WithNetmask(r.Mask))
	}
	if r.Router.To4() != nil {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptRouter(r.Router.To4())))
	}
	if len(r.DNS) > 0 {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptDNS(r.DNS...)))
	}
	if r.Name != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptHostName(r.Name)))
	}
	if r.Domain != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptDomainName(r.Domain)))
	}
	if p.LeaseTime > 0 {
		mods = append(mods, dhcpv4.WithLeaseTime(uint32(p.LeaseTime/time.Second)))
	}
	mods = append(mods, bootModifiers(p.Boot, sid)...)

	return newReply(req, mods...), nil
}

// newReply is dhcpv4.NewReplyFromRequest without drawing a random
// transaction ID (a getrandom call and a timer per packet) that the reply
// overwrites anyway.
func newReply(req *dhcpv4.DHCPv4, mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
	d := &dhcpv4.DHCPv4{
		OpCode:        dhcpv4.OpcodeBootReply,
		HWType:        req.HWType,
		TransactionID: req.TransactionID,
		Flags:         req.Flags,
		ClientHWAddr:  req.ClientHWAddr,
		ClientIPAddr:  net.IPv4zero,
		YourIPAddr:    net.IPv4zero,
		ServerIPAddr:  net.IPv4zero,
		GatewayIPAddr: req.GatewayIPAddr,
		Options:       dhcpv4.Options{},
	}
	if d.GatewayIPAddr == nil {
		d.GatewayIPAddr = net.IPv4zero
	}
	// RFC 3046: echo relay agent information; RFC 6842: echo client id.
	for _, code := range []dhcpv4.OptionCode{dhcpv4.OptionRelayAgentInformation, dhcpv4.OptionClientIdentifier} {
		if v := req.Options.Get(code); v != nil {
			d.Options.Update(dhcpv4.OptGeneric(code, v))
		}
	}
	for _, m := range mods {
		m(d)
	}
	return d
}

// bootModifiers turns a BootChoice into options 43, 60, 66, 67, 97, 175 and
// the file field.
func bootModifiers(b BootChoice, sid net.IP) []dhcpv4.Modifier {
	var mods []dhcpv4.Modifier
	if b.BootFile != "" {
		// The 128-byte file field cannot hold long URLs; option 67 can.
		if len(b.BootFile) < 128 {
			f := b.BootFile
			mods = append(mods, func(d *dhcpv4.DHCPv4) { d.BootFileName = f })
		}
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptBootFileName(b.BootFile)))
		if b.Kind == KindPXE || b.Kind == KindPlain {
			mods = append(mods, dhcpv4.WithOption(dhcpv4.OptTFTPServerName(sid.String())))
		}
	}
	if b.VendorClass != "" {
		mods = append(mods, dhcpv4.WithOption(dhcpv4.OptClassIdentifier(b.VendorClass)))
	}
	if b.Kind == KindPXE {
		// PXE_DISCOVERY_CONTROL = 8: boot the file named in this offer, no
		// boot server discovery (PXE 2.1 spec, sub-option 6).
		mods = append(mods, dhcpv4.WithGeneric(optVendorSpec, []byte{6, 1, 8, 255}))
	}
	if len(b.GUID) > 0 {
		mods = append(mods, dhcpv4.WithGeneric(optClientGUID, b.GUID))
	}
	if b.IPXENoProxyWait {
		mods = append(mods, dhcpv4.WithGeneric(optIPXEEncap, []byte{optIPXENoPXEDHCP, 1, 1}))
	}
	return mods
}
