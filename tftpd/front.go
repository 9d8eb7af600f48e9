package tftpd

import (
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// front is the TFTP port as pin/tftp sees it. pin/tftp v3.2.0 cannot
// negotiate windowsize (RFC 7440): it deletes every option but blksize and
// tsize from its OACK, and has no hook to change that. So front takes the
// octet-mode read requests that ask for a window of 2 or more out of the
// stream and runs them as windowed transfers of our own; every other
// datagram reaches pin/tftp as it arrived, and pin/tftp runs it lock-step.
//
// Being a wrapper, front hides the *net.UDPConn from pin/tftp, which then
// binds its transfer sockets to the wildcard address (the kernel picks the
// source address by route) instead of to the request's destination address.
type front struct {
	*net.UDPConn
	s   *Server
	v4  bool
	buf []byte
	oob []byte
}

func newFront(s *Server, conn *net.UDPConn) (*front, error) {
	f := &front{UDPConn: conn, s: s, buf: make([]byte, 65536)}
	la, _ := conn.LocalAddr().(*net.UDPAddr)
	f.v4 = la != nil && la.IP.To4() != nil
	var err error
	if f.v4 {
		err = ipv4.NewPacketConn(conn).SetControlMessage(ipv4.FlagDst, true)
		f.oob = ipv4.NewControlMessage(ipv4.FlagDst)
	} else {
		err = ipv6.NewPacketConn(conn).SetControlMessage(ipv6.FlagDst, true)
		f.oob = ipv6.NewControlMessage(ipv6.FlagDst)
	}
	if err != nil {
		return nil, fmt.Errorf("tftpd: enabling packet info on %s: %w", conn.LocalAddr(), err)
	}
	return f, nil
}

// ReadFrom implements net.PacketConn for pin/tftp's request loop (one
// goroutine): it returns the next datagram that is not a windowed read
// request.
func (f *front) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, oobn, _, from, err := f.ReadMsgUDP(f.buf, f.oob)
		if err != nil {
			return 0, nil, err
		}
		if req, err := parseRRQ(f.buf[:n]); err == nil && req.mode == "octet" && req.windowSize() >= 2 {
			f.s.startWindowed(req, from.AddrPort(), f.local(f.oob[:oobn]))
			continue
		}
		return copy(p, f.buf[:n]), from, nil
	}
}

// local returns the address a datagram was sent to, from its control
// message: the transfer answers from it. It is the zero Addr when unknown
// or not unicast (a broadcast request is answered from the address routing
// picks).
func (f *front) local(oob []byte) netip.Addr {
	var dst net.IP
	if f.v4 {
		var cm ipv4.ControlMessage
		if cm.Parse(oob) == nil {
			dst = cm.Dst
		}
	} else {
		var cm ipv6.ControlMessage
		if cm.Parse(oob) == nil {
			dst = cm.Dst
		}
	}
	a, _ := netip.AddrFromSlice(dst)
	a = a.Unmap()
	if !a.IsValid() || a.IsMulticast() || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return netip.Addr{}
	}
	return a
}
