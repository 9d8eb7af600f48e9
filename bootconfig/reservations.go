package bootconfig

import (
	"net"
	"net/netip"

	"github.com/bootfabric/bootfabric/dhcpd"
)

// Reservations returns dhcpd's view of the authority: the MACs of this server's nodes with their
// inventory address and host name, and the network options of the configuration. In proxy mode it
// only says which clients are this server's (the address comes from the network's DHCP server).
func (a *Authority) Reservations(opts NetworkOptions) (dhcpd.StaticReservations, error) {
	return NodeReservations(a.Owned(), opts)
}

// NodeReservations is Reservations for a list of nodes.
func NodeReservations(nodes []*InventoryNode, opts NetworkOptions) (dhcpd.StaticReservations, error) {
	m := map[string]dhcpd.Reservation{}
	for _, n := range nodes {
		r := dhcpd.Reservation{Name: n.Name, Mask: opts.Mask, Router: opts.Router, DNS: opts.DNS, Domain: opts.Domain}
		if n.IP.IsValid() {
			r.IP = n.IP.AsSlice()
		}
		m[n.MAC.String()] = r
	}
	return dhcpd.NewStaticReservations(m)
}

// NetworkOptions are the DHCP options every node of this server gets besides its address.
type NetworkOptions struct {
	Mask   []byte
	Router []byte
	DNS    []net.IP
	Domain string
}

// NetworkOptions turns the DHCP configuration into NetworkOptions.
func (c *DHCPConfig) NetworkOptions() NetworkOptions {
	var o NetworkOptions
	if p, err := netip.ParsePrefix(c.Subnet); err == nil {
		o.Mask = net.CIDRMask(p.Bits(), 32)
	}
	if a, err := netip.ParseAddr(c.Router); err == nil {
		o.Router = a.AsSlice()
	}
	for _, d := range c.DNS {
		if a, err := netip.ParseAddr(d); err == nil {
			o.DNS = append(o.DNS, a.AsSlice())
		}
	}
	o.Domain = c.Domain
	return o
}

// PoolNetwork is what pool leases get besides their address.
func (c *DHCPConfig) PoolNetwork() dhcpd.Reservation {
	o := c.NetworkOptions()
	return dhcpd.Reservation{Mask: o.Mask, Router: o.Router, DNS: o.DNS, Domain: o.Domain}
}
