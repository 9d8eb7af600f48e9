package bootconfig

import (
	"fmt"
	"net/netip"

	"github.com/bootfabric/bootfabric/dhcpd"
)

// CheckNodes checks the nodes au gives a server of c against c's DHCP settings: with reservations,
// each owned node needs an address in the subnet (or a pool to get one from), and no inventory
// address may lie in the pool's range, whichever server owns it (a reservation of any server would
// collide with a lease). Errors name the inventory line.
func (c *Config) CheckNodes(au *Authority) error {
	if err := c.checkOwnedAddresses(au); err != nil {
		return err
	}
	return c.checkPoolAddresses(au.Inventory())
}

func (c *Config) checkOwnedAddresses(au *Authority) error {
	if c.DHCP.Mode != dhcpd.ModeReservation {
		return nil
	}
	subnet := netip.MustParsePrefix(c.DHCP.Subnet).Masked()
	for _, n := range au.Owned() {
		if !n.IP.IsValid() {
			if c.DHCP.Pool != nil {
				continue // a pool address
			}
			return &Error{File: au.Inventory().File, Line: n.Line, Field: "ip", Msg: fmt.Sprintf("node %s has no address: give it one, or add dhcp.pool to hand it a pool address", n.Name)}
		}
		if !subnet.Contains(n.IP) {
			return &Error{File: au.Inventory().File, Line: n.Line, Field: "ip", Msg: fmt.Sprintf("%s of node %s is outside dhcp.subnet %s", n.IP, n.Name, subnet)}
		}
	}
	return nil
}

func (c *Config) checkPoolAddresses(inv *Inventory) error {
	pc := c.DHCP.Pool
	if pc == nil {
		return nil
	}
	first, last := c.PoolBounds()
	for _, n := range inv.Nodes {
		if n.IP.IsValid() && !n.IP.Less(first) && !last.Less(n.IP) {
			return &Error{File: inv.File, Line: n.Line, Field: "ip", Msg: fmt.Sprintf("%s of node %s is inside dhcp.pool.range %s", n.IP, n.Name, pc.Range)}
		}
	}
	return nil
}
