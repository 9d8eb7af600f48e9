package bootsrv

import (
	"context"
	"fmt"
	"hash/fnv"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
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
		s.openFleetPool(pc, now)
		return nil
	}
	first, last := s.cfg.PoolRange()
	path := filepath.Join(s.cfg.StateDir, bootconfig.PoolFile)
	opts := dhcpd.PoolOptions{LeaseTime: time.Duration(pc.Lease), Now: now, Registerer: s.reg}
	share := -1
	if pc.Unknown {
		// This server's nodes without an ip: its part of the range is theirs.
		share = s.unknownShare(first, last, withoutIP(s.auth.Owned()), s.cfg.UnknownMax(false))
		opts.Limited, opts.LimitedMax = s.outsideInventory, share
	}
	p, err := dhcpd.OpenPool(path, first.AsSlice(), last.AsSlice(), opts)
	if err != nil {
		return fmt.Errorf("dhcp.pool: %w", err)
	}
	s.pool, s.addrPool = p, p
	s.log.Info("dhcp pool open", zap.Stringer("first", first), zap.Stringer("last", last),
		zap.Duration("lease", time.Duration(pc.Lease)), zap.Bool("unknown", pc.Unknown), zap.Int("unknown_share", share), zap.String("leases", path))
	return nil
}

// openFleetPool opens a fleet server's pool: the whole range, shared through etcd, whose
// transactions keep each address to one MAC.
func (s *Server) openFleetPool(pc *bootconfig.PoolConfig, now func() time.Time) {
	first, last := s.cfg.PoolBounds()
	start, _ := s.cfg.PoolRange()
	if now == nil {
		now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopPool = cancel // the pool's watch lives as long as the server
	fp := &fleetPool{c: s.fleet.opts.Client, cache: s.fleet.opts.Client.WatchPool(ctx, fleetOfferHold),
		member: s.fleet.m, first: first, last: last, start: start, lease: time.Duration(pc.Lease), now: now}
	share := -1
	if pc.Unknown {
		// Every inventory node without an ip may come to this server (ownership moves with
		// the members), and all of them share the whole range.
		nodes := s.auth.Inventory().Nodes
		all := make([]*bootconfig.InventoryNode, len(nodes))
		for i := range nodes {
			all[i] = &nodes[i]
		}
		share = s.unknownShare(first, last, withoutIP(all), s.cfg.UnknownMax(true))
		fp.unknown = s.outsideInventory
		if share > 0 {
			fp.unknownLast = bootconfig.PoolAddr(first, share-1)
		}
	}
	s.addrPool = fp
	s.log.Info("dhcp pool in etcd", zap.Stringer("first", first), zap.Stringer("last", last), zap.Duration("lease", time.Duration(pc.Lease)),
		zap.Bool("unknown", pc.Unknown), zap.Int("unknown_share", share))
}

// withoutIP counts the nodes the inventory gives no address.
func withoutIP(nodes []*bootconfig.InventoryNode) int {
	n := 0
	for _, node := range nodes {
		if !node.IP.IsValid() {
			n++
		}
	}
	return n
}

// unknownShare returns how many addresses of first..last MACs outside the inventory may hold
// together: what is left once each of the need inventory nodes that may take a pool address (those
// without an ip) has one, so that however many unknown MACs come every inventory node finds an
// address; at most ceiling (dhcp.pool.unknown_max) unless it is negative. It warns when nothing is
// left.
func (s *Server) unknownShare(first, last netip.Addr, need, ceiling int) int {
	size := bootconfig.PoolSize(first, last)
	share := max(size-need, 0)
	if ceiling >= 0 {
		share = min(share, ceiling)
	}
	if share == 0 {
		s.log.Warn("dhcp.pool.unknown is on but no pool address is left for MACs outside the inventory: they get none",
			zap.Int("pool_size", size), zap.Int("inventory_nodes_without_ip", need), zap.Int("unknown_max", s.cfg.DHCP.Pool.UnknownMax))
	}
	return share
}

// outsideInventory reports whether mac is not in the inventory: the pool limits such MACs to
// their share (unknownShare).
func (s *Server) outsideInventory(mac net.HardwareAddr) bool {
	_, known := s.auth.Inventory().ByMAC(mac)
	return !known
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
