package bootsrv

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"go.uber.org/zap"
)

// poolWorkers is the default number of DHCP workers with a pool. A worker that acknowledges a pool
// lease waits for the fsync that makes the lease durable; the leases committed meanwhile share it,
// so the rate is about workers / fsync latency. At 256 workers a 20 ms fsync (a busy shared disk)
// still allows 12,800 leases/s; an idle worker costs a parked goroutine.
const poolWorkers = 256

// openPool opens this server's part of dhcp.pool.range with its leases in STATE_DIR/PoolFile. It
// leaves s.pool nil when no pool is configured.
func (s *Server) openPool(now func() time.Time) error {
	pc := s.cfg.DHCP.Pool
	if pc == nil {
		return nil
	}
	s.live = nil
	for i := range s.cfg.Servers {
		if !slices.Contains(s.cfg.FailedServers, i) {
			s.live = append(s.live, i)
		}
	}
	if s.fleet != nil {
		// A fleet shares the whole range: etcd transactions keep each address to one MAC.
		first, last := s.cfg.poolBounds()
		start, _ := s.cfg.PoolRange()
		if now == nil {
			now = time.Now
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.stopPool = cancel // the pool's watch lives as long as the server
		s.addrPool = &fleetPool{c: s.fleet.opts.Client, cache: s.fleet.opts.Client.WatchPool(ctx, fleetOfferHold),
			member: s.fleet.m.Load, first: first, last: last, start: start, lease: time.Duration(pc.Lease), now: now}
		s.log.Info("dhcp pool in etcd", zap.Stringer("first", first), zap.Stringer("last", last), zap.Duration("lease", time.Duration(pc.Lease)))
		return nil
	}
	first, last := s.cfg.PoolRange()
	path := filepath.Join(s.cfg.StateDir, PoolFile)
	p, err := dhcpd.OpenPool(path, first.AsSlice(), last.AsSlice(), dhcpd.PoolOptions{
		LeaseTime: time.Duration(pc.Lease), Now: now, Registerer: s.reg,
	})
	if err != nil {
		return fmt.Errorf("dhcp.pool: %w", err)
	}
	s.pool, s.addrPool = p, p
	s.log.Info("dhcp pool open", zap.Stringer("first", first), zap.Stringer("last", last),
		zap.Duration("lease", time.Duration(pc.Lease)), zap.Bool("unknown", pc.Unknown), zap.String("leases", path))
	return nil
}

// closePool closes the pool's lease file (nil without a pool).
func (s *Server) closePool() error {
	if s.stopPool != nil {
		s.stopPool()
	}
	if s.pool == nil {
		return nil
	}
	return s.pool.Close()
}

// poolAllowed says whether a MAC without a reservation of this server may get a pool address:
// never an inventory node (another server owns it; this server's own nodes are reservations, with
// or without an address), and a MAC outside the inventory only with dhcp.pool.unknown, on the one
// live server its hash picks, so that an unknown client gets one offer rather than one per server.
func (s *Server) poolAllowed(mac net.HardwareAddr) bool {
	if !s.cfg.DHCP.Pool.Unknown {
		return false
	}
	if _, known := s.auth.Inventory().ByMAC(mac); known {
		return false
	}
	return UnknownOwner(mac, s.liveServers()) == s.cfg.ServerID
}

// liveServers are the servers that answer MACs outside the inventory: in a fleet the live
// members as last seen, else every server not in failed_servers.
func (s *Server) liveServers() []int {
	if s.fleet != nil {
		if l := s.fleet.liveIDs.Load(); l != nil {
			return *l
		}
	}
	return s.live
}

// UnknownOwner is the server, among the live ones, that answers a MAC outside the inventory from
// its pool: FNV-1a of the MAC modulo the number of live servers. -1 when none is live.
func UnknownOwner(mac net.HardwareAddr, live []int) int {
	if len(live) == 0 {
		return -1
	}
	h := fnv.New32a()
	h.Write(mac)
	return live[h.Sum32()%uint32(len(live))]
}

// checkPoolInventory refuses an inventory address inside dhcp.pool.range (any server's part: a
// reservation of any server would collide with a lease), naming the inventory line.
func (s *Server) checkPoolInventory() error {
	pc := s.cfg.DHCP.Pool
	if pc == nil {
		return nil
	}
	inv := s.auth.Inventory()
	first, last := s.cfg.poolBounds()
	for _, n := range inv.Nodes {
		if n.IP.IsValid() && !n.IP.Less(first) && !last.Less(n.IP) {
			return &Error{File: inv.File, Line: n.Line, Field: "ip", Msg: fmt.Sprintf("%s of node %s is inside dhcp.pool.range %s", n.IP, n.Name, pc.Range)}
		}
	}
	return nil
}

// poolNetwork is what pool leases get besides their address.
func (c *DHCPConfig) poolNetwork() dhcpd.Reservation {
	o := c.networkOptions()
	return dhcpd.Reservation{Mask: o.Mask, Router: o.Router, DNS: o.DNS, Domain: o.Domain}
}
