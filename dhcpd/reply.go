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
//
// An OFFER or ACK is built as coredhcp's plugins build theirs: a chain of
// small option modifiers, each adding one group of fields, runs over the
// reply in turn: first the ones every reply has (replyChain), then the ones of
// the client's boot class (bootChain). Unlike coredhcp's plugins, a modifier
// keeps no configuration of its own in package variables: everything it
// needs comes in its argument. The boot class (p.Boot.Kind) decides which
// BootChoice fields are used: option 60 only for PXE, HTTP boot and iPXE,
// option 175 only for iPXE, as Classify sets them.
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
		return nakReply(req, sid), nil
	case dhcpv4.MessageTypeOffer, dhcpv4.MessageTypeAck:
	default:
		return nil, fmt.Errorf("dhcpd: build reply: unsupported message type %v", p.Type)
	}
	in := replyInput{req: req, p: &p, sid: sid}
	resp := newReply(req)
	for _, m := range replyChain {
		m(in, resp)
	}
	for _, m := range bootChain(p.Boot.Kind) {
		m(in, resp)
	}
	return resp, nil
}

// nakReply is a NAK: the message type and the server identifier only.
func nakReply(req *dhcpv4.DHCPv4, sid net.IP) *dhcpv4.DHCPv4 {
	resp := newReply(req)
	resp.UpdateOption(dhcpv4.OptMessageType(dhcpv4.MessageTypeNak))
	resp.UpdateOption(dhcpv4.OptServerIdentifier(sid))
	// RFC 2131 4.3.2: a NAK through a relay asks it to broadcast.
	if !unspecified(req.GatewayIPAddr) {
		resp.SetBroadcast()
	}
	return resp
}

// newReply is dhcpv4.NewReplyFromRequest without drawing a random
// transaction ID (a getrandom call and a timer per packet) that the reply
// overwrites anyway.
func newReply(req *dhcpv4.DHCPv4) *dhcpv4.DHCPv4 {
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
	return d
}
