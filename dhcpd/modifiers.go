package dhcpd

import (
	"net"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// replyInput is what an option modifier reads: the request, the reply's
// parameters and the server's IPv4 address (option 54, siaddr).
type replyInput struct {
	req *dhcpv4.DHCPv4
	p   *ReplyParams
	sid net.IP
}

// An optionModifier adds one group of fields or options to an OFFER or ACK
// being built. It is coredhcp's plugin handler made pure: it reads its
// settings from in, never from package variables, and cannot stop the chain
// (deciding whether to answer at all is Handler's job, before any reply is
// built). Options are kept by code and written sorted, so the order of the
// modifiers in a chain does not change the bytes.
type optionModifier func(in replyInput, resp *dhcpv4.DHCPv4)

// replyChain are the modifiers of every OFFER and ACK, whatever the client
// boots: who answers, the address, the network and the lease.
var replyChain = [...]optionModifier{withServerIdentity, withAddress, withNetwork, withLeaseTime}

// Boot-class chains: what each kind of boot client is told on top of
// replyChain. A BootChoice field its kind does not use is ignored.
var (
	// Plain DHCP clients get PlainFile, fetched over TFTP.
	plainChain = [...]optionModifier{withBootFile, withTFTPServerName, withClientGUID}
	// PXE firmware gets a TFTP file, its vendor class echoed and the PXE
	// discovery control that makes it boot the file at once.
	pxeChain = [...]optionModifier{withBootFile, withTFTPServerName, withVendorClass, withPXEDiscoveryControl, withClientGUID}
	// UEFI HTTP boot firmware gets a full URL and "HTTPClient" echoed, which
	// it needs to take the offer as an HTTP boot offer.
	httpChain = [...]optionModifier{withBootFile, withVendorClass, withClientGUID}
	// iPXE gets its script URL and option 175, so that it does not wait for
	// proxyDHCP offers.
	ipxeChain = [...]optionModifier{withBootFile, withVendorClass, withClientGUID, withIPXENoProxyWait}
)

// bootChain returns the modifiers of boot class k. The tables above are
// never written; they are variables only because Go has no constant arrays
// of functions.
func bootChain(k ClientKind) []optionModifier {
	switch k {
	case KindPlain:
		return plainChain[:]
	case KindPXE:
		return pxeChain[:]
	case KindIPXE:
		return ipxeChain[:]
	}
	return httpChain[:]
}

// withServerIdentity sets the message type, next-server (siaddr) and the
// server identifier (option 54).
func withServerIdentity(in replyInput, resp *dhcpv4.DHCPv4) {
	resp.UpdateOption(dhcpv4.OptMessageType(in.p.Type))
	resp.ServerIPAddr = in.sid
	resp.UpdateOption(dhcpv4.OptServerIdentifier(in.sid))
}

// withAddress sets yiaddr to the reservation's address (none in proxy
// mode and for INFORM) and, answering an INFORM, echoes ciaddr.
func withAddress(in replyInput, resp *dhcpv4.DHCPv4) {
	if ip := in.p.Reservation.IP.To4(); ip != nil {
		resp.YourIPAddr = ip
	}
	if in.req.MessageType() == dhcpv4.MessageTypeInform {
		resp.ClientIPAddr = in.req.ClientIPAddr
	}
}

// withNetwork adds the reservation's network options: mask (1), router
// (3), name servers (6), host name (12) and domain (15), each when set.
func withNetwork(in replyInput, resp *dhcpv4.DHCPv4) {
	r := &in.p.Reservation
	if len(r.Mask) == net.IPv4len {
		resp.UpdateOption(dhcpv4.OptSubnetMask(r.Mask))
	}
	if r.Router.To4() != nil {
		resp.UpdateOption(dhcpv4.OptRouter(r.Router.To4()))
	}
	if len(r.DNS) > 0 {
		resp.UpdateOption(dhcpv4.OptDNS(r.DNS...))
	}
	if r.Name != "" {
		resp.UpdateOption(dhcpv4.OptHostName(r.Name))
	}
	if r.Domain != "" {
		resp.UpdateOption(dhcpv4.OptDomainName(r.Domain))
	}
}

// withLeaseTime adds option 51 in whole seconds, unless the lease time is
// zero (proxyDHCP, INFORM).
func withLeaseTime(in replyInput, resp *dhcpv4.DHCPv4) {
	if in.p.LeaseTime > 0 {
		secs := uint32(in.p.LeaseTime / time.Second)
		resp.UpdateOption(dhcpv4.OptIPAddressLeaseTime(time.Duration(secs) * time.Second))
	}
}

// withBootFile puts the boot file (a TFTP path or a URL) into option 67,
// and into the file field when it fits: the 128-byte field cannot hold long
// URLs, option 67 can.
func withBootFile(in replyInput, resp *dhcpv4.DHCPv4) {
	f := in.p.Boot.BootFile
	if f == "" {
		return
	}
	if len(f) < 128 {
		resp.BootFileName = f
	}
	resp.UpdateOption(dhcpv4.OptBootFileName(f))
}

// withTFTPServerName names this server in option 66 for clients that fetch
// their boot file over TFTP.
func withTFTPServerName(in replyInput, resp *dhcpv4.DHCPv4) {
	if in.p.Boot.BootFile != "" {
		resp.UpdateOption(dhcpv4.OptTFTPServerName(in.sid.String()))
	}
}

// withVendorClass echoes "PXEClient" or "HTTPClient" in option 60.
func withVendorClass(in replyInput, resp *dhcpv4.DHCPv4) {
	if vc := in.p.Boot.VendorClass; vc != "" {
		resp.UpdateOption(dhcpv4.OptClassIdentifier(vc))
	}
}

// withPXEDiscoveryControl sets PXE_DISCOVERY_CONTROL = 8 (option 43,
// sub-option 6): boot the file named in this offer, no boot server
// discovery (PXE 2.1 spec).
func withPXEDiscoveryControl(_ replyInput, resp *dhcpv4.DHCPv4) {
	resp.UpdateOption(dhcpv4.OptGeneric(optVendorSpec, []byte{6, 1, 8, 255}))
}

// withClientGUID echoes the client's machine identifier (option 97,
// RFC 4578) when it sent one.
func withClientGUID(in replyInput, resp *dhcpv4.DHCPv4) {
	if g := in.p.Boot.GUID; len(g) > 0 {
		resp.UpdateOption(dhcpv4.OptGeneric(optClientGUID, g))
	}
}

// withIPXENoProxyWait sets iPXE's encapsulated option 175.176 = 1, so that
// iPXE does not wait about 3 s for proxyDHCP offers.
func withIPXENoProxyWait(in replyInput, resp *dhcpv4.DHCPv4) {
	if in.p.Boot.IPXENoProxyWait {
		resp.UpdateOption(dhcpv4.OptGeneric(optIPXEEncap, []byte{optIPXENoPXEDHCP, 1, 1}))
	}
}
