package dhcpd

import (
	"fmt"
	"net"
	"syscall"
	"unsafe"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
	"golang.org/x/sys/unix"
)

// Delivery says how a reply reaches its client (RFC 2131 4.1). It labels
// the replies metric.
type Delivery string

// Deliveries.
const (
	// DeliverRelay: to the relay agent at giaddr, server port.
	DeliverRelay Delivery = "relay"
	// DeliverPeer: back to the sender's address and port (proxyDHCP port
	// 4011, or a client on a non-standard port).
	DeliverPeer Delivery = "peer"
	// DeliverClientIP: to ciaddr, which the client already has (renewing,
	// INFORM).
	DeliverClientIP Delivery = "ciaddr"
	// DeliverUnicast: to yiaddr at chaddr, for a client that has no address
	// yet and did not ask for broadcast. The server first installs a
	// neighbour entry yiaddr -> chaddr, since the client cannot answer ARP.
	DeliverUnicast Delivery = "unicast"
	// DeliverBroadcast: to 255.255.255.255 on the arriving interface.
	DeliverBroadcast Delivery = "broadcast"
)

// Route is where one reply goes.
type Route struct {
	Delivery Delivery
	// Addr is the UDP destination.
	Addr *net.UDPAddr
	// IfIndex sends through the arriving interface (0: let routing decide).
	IfIndex int
	// HWAddr is the client's link-layer address, for DeliverUnicast.
	HWAddr net.HardwareAddr
}

// Arrival is what the socket told about a request: sender, interface, and
// whether it came on the proxyDHCP boot-server port.
type Arrival struct {
	Peer       *net.UDPAddr
	IfIndex    int
	BootServer bool
}

// RouteReply decides where the reply to req goes, following RFC 2131 4.1:
// a relay gets it at giaddr; a client with an address at ciaddr (except a
// NAK); a client that set the broadcast bit, or whose link is not Ethernet,
// or that is being told NAK, by broadcast; any other client by unicast to
// yiaddr at chaddr. Broadcasting every reply is legal but costs every host on
// the segment a wake-up per reply: in a boot storm of n clients on one
// switch that is n^2 deliveries, and the clients' own retries time out.
// clientPort and relayPort are the standard ports (68, 67) or a test's.
// RouteReply is pure.
func RouteReply(req, reply *dhcpv4.DHCPv4, in Arrival, clientPort, relayPort int) Route {
	nak := reply.MessageType() == dhcpv4.MessageTypeNak
	switch {
	case in.BootServer && in.Peer != nil:
		return Route{Delivery: DeliverPeer, Addr: in.Peer}
	case !unspecified(req.GatewayIPAddr):
		return Route{Delivery: DeliverRelay, Addr: &net.UDPAddr{IP: req.GatewayIPAddr.To4(), Port: relayPort}}
	case fromOtherPort(in.Peer, clientPort):
		// A client on a non-standard port (tests, tools such as dhcping)
		// listens where it sent from.
		return Route{Delivery: DeliverPeer, Addr: in.Peer}
	case !nak && !unspecified(req.ClientIPAddr):
		return Route{Delivery: DeliverClientIP, Addr: &net.UDPAddr{IP: req.ClientIPAddr.To4(), Port: clientPort}}
	case !nak && canUnicast(req, reply, in.IfIndex):
		return Route{Delivery: DeliverUnicast, Addr: &net.UDPAddr{IP: reply.YourIPAddr.To4(), Port: clientPort},
			IfIndex: in.IfIndex, HWAddr: req.ClientHWAddr}
	}
	return Route{Delivery: DeliverBroadcast, Addr: &net.UDPAddr{IP: net.IPv4bcast, Port: clientPort}, IfIndex: in.IfIndex}
}

// fromOtherPort reports whether peer is an IPv4 client that sent from
// another port than the client port.
func fromOtherPort(peer *net.UDPAddr, clientPort int) bool {
	return peer != nil && peer.Port != clientPort && peer.IP.To4() != nil && !peer.IP.IsUnspecified()
}

// canUnicast reports whether reply can go to yiaddr at chaddr: the client
// did not ask for broadcast, the arriving interface is known, there is a
// yiaddr, and the link is Ethernet (a neighbour entry needs its address).
func canUnicast(req, reply *dhcpv4.DHCPv4, ifIndex int) bool {
	return !req.IsBroadcast() && ifIndex != 0 && !unspecified(reply.YourIPAddr) &&
		req.HWType == iana.HWTypeEthernet && len(req.ClientHWAddr) == 6
}

func unspecified(ip net.IP) bool { return ip == nil || ip.IsUnspecified() }

// atfCom is ATF_COM of <net/if_arp.h>: the entry is complete (has a
// link-layer address).
const atfCom = 0x02

// arpReq is struct arpreq of <net/if_arp.h>.
type arpReq struct {
	pa    unix.RawSockaddrInet4
	ha    unix.RawSockaddr
	flags int32
	mask  unix.RawSockaddrInet4
	dev   [unix.IFNAMSIZ]byte
}

// setNeighbour installs (or refreshes) the neighbour entry ip -> hw on the
// interface named dev with SIOCSARP on the socket rc, so that a unicast to a
// client that cannot yet answer ARP goes out at once. It needs
// CAP_NET_ADMIN. The entry is an ordinary reachable one: the kernel ages it
// out like any learnt entry.
func setNeighbour(rc syscall.RawConn, dev string, ip net.IP, hw net.HardwareAddr) error {
	ip4 := ip.To4()
	if ip4 == nil || len(hw) != 6 || dev == "" || len(dev) >= unix.IFNAMSIZ {
		return fmt.Errorf("neighbour entry %v -> %v on %q: bad arguments", ip, hw, dev)
	}
	var r arpReq
	r.pa.Family = unix.AF_INET
	copy(r.pa.Addr[:], ip4)
	r.ha.Family = unix.ARPHRD_ETHER
	for i, b := range hw {
		r.ha.Data[i] = int8(b)
	}
	r.flags = atfCom
	copy(r.dev[:], dev)
	var errno syscall.Errno
	err := rc.Control(func(fd uintptr) {
		_, _, errno = unix.Syscall(unix.SYS_IOCTL, fd, unix.SIOCSARP, uintptr(unsafe.Pointer(&r)))
	})
	if err != nil {
		return fmt.Errorf("neighbour entry %v -> %v on %s: %w", ip, hw, dev, err)
	}
	if errno != 0 {
		return fmt.Errorf("neighbour entry %v -> %v on %s: SIOCSARP: %w", ip, hw, dev, errno)
	}
	return nil
}
