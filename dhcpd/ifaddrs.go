package dhcpd

import (
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// maxIfconfEntries bounds the addresses localPrefixes reads: a host with more
// IPv4 addresses than this is beyond what the check is for.
const maxIfconfEntries = 1 << 16

// ifconf is struct ifconf of <net/if.h>.
type ifconf struct {
	len int32
	buf unsafe.Pointer // the compiler pads it to the pointer's alignment, as C does
}

// localPrefixes returns the subnets of every IPv4 address of the network
// namespace that the socket rc belongs to (SIOCGIFCONF lists each address
// with its label, SIOCGIFNETMASK with the label and the address gives that
// address's mask). Asking through the socket, not netlink from the calling
// thread, gives the socket's namespace, which the process's threads may not
// share (tests, bootctl in a namespace).
func localPrefixes(rc syscall.RawConn) ([]netip.Prefix, error) {
	var out []netip.Prefix
	var ierr error
	err := rc.Control(func(fd uintptr) {
		var addrs []ifAddress
		if addrs, ierr = ifconfAddrs(int(fd)); ierr != nil {
			return
		}
		for _, a := range addrs {
			bits, err := netmask(int(fd), a)
			if err != nil {
				continue // the address went meanwhile
			}
			out = append(out, netip.PrefixFrom(a.addr, bits).Masked())
		}
	})
	if err != nil {
		return nil, fmt.Errorf("local addresses: %w", err)
	}
	if ierr != nil {
		return nil, fmt.Errorf("local addresses: %w", ierr)
	}
	return out, nil
}

// ifAddress is one entry of SIOCGIFCONF: an address and its label (the
// interface's name, or an alias label such as eth0:1).
type ifAddress struct {
	label string
	addr  netip.Addr
}

// ifconfAddrs lists the IPv4 addresses of fd's namespace with SIOCGIFCONF,
// growing the buffer until the list fits.
func ifconfAddrs(fd int) ([]ifAddress, error) {
	size := int(unsafe.Sizeof(unix.Ifreq{}))
	for n := 64; n <= maxIfconfEntries; n *= 4 {
		buf := make([]byte, n*size)
		ifc := ifconf{len: int32(len(buf)), buf: unsafe.Pointer(&buf[0])}
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCGIFCONF, uintptr(unsafe.Pointer(&ifc))); errno != 0 {
			return nil, fmt.Errorf("SIOCGIFCONF: %w", errno)
		}
		if int(ifc.len) >= len(buf) {
			continue // maybe cut short: ask again with more room
		}
		var out []ifAddress
		for off := 0; off+size <= int(ifc.len); off += size {
			e := buf[off : off+size]
			// struct ifreq: the name, then a struct sockaddr_in (family
			// in host order, port, address).
			if binary.NativeEndian.Uint16(e[unix.IFNAMSIZ:]) != unix.AF_INET {
				continue
			}
			a := netip.AddrFrom4([4]byte(e[unix.IFNAMSIZ+4 : unix.IFNAMSIZ+8]))
			out = append(out, ifAddress{label: unix.ByteSliceToString(e[:unix.IFNAMSIZ]), addr: a})
		}
		return out, nil
	}
	return nil, fmt.Errorf("SIOCGIFCONF: more than %d addresses", maxIfconfEntries)
}

// netmask returns the prefix length of address a (SIOCGIFNETMASK given the
// label and the address picks that address among the label's).
func netmask(fd int, a ifAddress) (int, error) {
	ifr, err := unix.NewIfreq(a.label)
	if err != nil {
		return 0, err
	}
	ip := a.addr.As4()
	if err := ifr.SetInet4Addr(ip[:]); err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFNETMASK, ifr); err != nil {
		return 0, err
	}
	m, err := ifr.Inet4Addr()
	if err != nil {
		return 0, err
	}
	ones, bits := net.IPMask(m).Size()
	if bits == 0 {
		return 32, nil // a non-contiguous mask: the address alone
	}
	return ones, nil
}
