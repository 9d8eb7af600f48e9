package bootsrv

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// noRouterAdvertisement is an ICMPv6 router advertisement with no flags, router lifetime 0 and no
// options: "no router, no DHCPv6, no prefix". iPXE ends its IPv6 configuration on the first one it
// gets instead of soliciting for 13-16 s before it runs its script; hosts that have a real router
// keep it (a zero lifetime only says that this sender is not one). The kernel fills in the checksum.
var noRouterAdvertisement = []byte{134, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}

const (
	icmpv6RouterSolicitation = 133
	// raMinGap is the least time between two advertisements on one interface: a flood of
	// solicitations gets one multicast answer per gap, which serves every node soliciting in it.
	raMinGap = 100 * time.Millisecond
	// RAInterval is the default period of unsolicited advertisements, RFC 4861's least
	// MinRtrAdvInterval: they cover a solicitation lost before the server listened.
	RAInterval = 3 * time.Second
)

// NoRouterAdvertiser tells one interface's link that it has no IPv6 router: it answers router
// solicitations, and every interval sends unsolicited, the advertisement noRouterAdvertisement,
// to all nodes (ff02::1).
type NoRouterAdvertiser struct {
	f        *os.File
	ifname   string
	ifidx    int
	interval time.Duration
	log      *zap.Logger
	done     chan struct{}
	mu       sync.Mutex
	sent     int
	serving  bool
}

// ListenNoRouter opens the advertiser's socket on interface ifname of the calling thread's network
// namespace. interval 0 is RAInterval. It sends nothing until Serve.
func ListenNoRouter(ifname string, interval time.Duration, log *zap.Logger) (*NoRouterAdvertiser, error) {
	if interval <= 0 {
		interval = RAInterval
	}
	ifi, err := net.InterfaceByName(ifname)
	if err != nil {
		return nil, fmt.Errorf("router advertisements on %s: %w", ifname, err)
	}
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_RAW|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, unix.IPPROTO_ICMPV6)
	if err != nil {
		return nil, fmt.Errorf("router advertisements on %s: raw ICMPv6 socket (needs CAP_NET_RAW): %w", ifname, err)
	}
	var filter unix.ICMPv6Filter
	for i := range filter.Data {
		filter.Data[i] = 0xffffffff // a set bit blocks the type
	}
	filter.Data[icmpv6RouterSolicitation>>5] &^= 1 << (icmpv6RouterSolicitation & 31)
	group := unix.IPv6Mreq{Multiaddr: netip.MustParseAddr("ff02::2").As16(), Interface: uint32(ifi.Index)}
	for _, set := range []func() error{
		func() error { return unix.SetsockoptICMPv6Filter(fd, unix.SOL_ICMPV6, unix.ICMPV6_FILTER, &filter) },
		func() error { return unix.SetsockoptString(fd, unix.SOL_SOCKET, unix.SO_BINDTODEVICE, ifname) },
		func() error { return unix.SetsockoptIPv6Mreq(fd, unix.IPPROTO_IPV6, unix.IPV6_JOIN_GROUP, &group) },
		// Neighbour discovery requires hop limit 255 (RFC 4861 6.1.2).
		func() error { return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_HOPS, 255) },
		func() error { return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_UNICAST_HOPS, 255) },
		func() error { return unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_MULTICAST_IF, ifi.Index) },
	} {
		if err := set(); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("router advertisements on %s: %w", ifname, err)
		}
	}
	return &NoRouterAdvertiser{
		f: os.NewFile(uintptr(fd), "icmpv6-"+ifname), ifname: ifname, ifidx: ifi.Index,
		interval: interval, log: log, done: make(chan struct{}),
	}, nil
}

// Serve answers solicitations until ctx ends or Close is called; it closes the socket.
func (r *NoRouterAdvertiser) Serve(ctx context.Context) error {
	r.mu.Lock()
	r.serving = true
	r.mu.Unlock()
	defer close(r.done)
	stop := context.AfterFunc(ctx, func() { r.f.Close() })
	defer stop()
	solicited := make(chan struct{}, 1)
	sender := make(chan struct{})
	go func() {
		defer close(sender)
		r.send(solicited)
	}()
	defer func() {
		close(solicited)
		<-sender
	}()
	buf := make([]byte, 1500)
	for {
		n, err := r.f.Read(buf)
		if err != nil {
			return nil // closed: ctx ended or Close
		}
		if n >= 8 && buf[0] == icmpv6RouterSolicitation && buf[1] == 0 {
			select {
			case solicited <- struct{}{}:
			default: // an answer is already due; it serves this one too
			}
		}
	}
}

// send sends an advertisement for each solicitation, at most one per raMinGap, and one every
// interval; it returns when solicited is closed.
func (r *NoRouterAdvertiser) send(solicited <-chan struct{}) {
	tick := time.NewTicker(r.interval)
	defer tick.Stop()
	dst := &unix.SockaddrInet6{Addr: netip.MustParseAddr("ff02::1").As16(), ZoneId: uint32(r.ifidx)}
	var last time.Time
	for {
		select {
		case _, ok := <-solicited:
			if !ok {
				return
			}
			if wait := raMinGap - time.Since(last); wait > 0 {
				time.Sleep(wait)
			}
		case <-tick.C:
		}
		last = time.Now()
		rc, err := r.f.SyscallConn()
		if err != nil {
			continue
		}
		var serr error
		if err := rc.Write(func(fd uintptr) bool {
			serr = unix.Sendto(int(fd), noRouterAdvertisement, 0, dst)
			return true
		}); err != nil {
			continue // closed
		}
		if serr != nil {
			r.log.Debug("sending router advertisement", zap.String("interface", r.ifname), zap.Error(serr))
			continue
		}
		r.mu.Lock()
		r.sent++
		r.mu.Unlock()
	}
}

// Sent is the number of advertisements sent so far.
func (r *NoRouterAdvertiser) Sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

// Close stops Serve and waits for it; before Serve it closes the socket.
func (r *NoRouterAdvertiser) Close() {
	r.f.Close()
	r.mu.Lock()
	serving := r.serving
	r.mu.Unlock()
	if serving {
		<-r.done
	}
}

// raInterfaces returns the interfaces the advertiser serves: dhcp.interfaces, or else the
// interface that holds this server's address on the boot network (never loopback). Nothing
// broader: an address that merely lies in dhcp.subnet may be another network's.
func raInterfaces(names []string, address string) ([]string, error) {
	if len(names) > 0 {
		return names, nil
	}
	want, err := netip.ParseAddr(address)
	if err != nil {
		return nil, nil
	}
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifi.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap() == want {
					return []string{ifi.Name}, nil
				}
			}
		}
	}
	return nil, nil
}
