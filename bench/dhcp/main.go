// Command dhcp is the benchmark tool of bench/dhcp/run.sh. By default it is a
// bench server: a bare dhcpd.Server, without bootsrv, that owns every MAC
// (reservation mode, address derived from the MAC) or hands out addresses from
// a bbolt-backed pool. With -inventory it writes instead the inventory and the
// perfdhcp MAC list (-M) for running `bootctl serve` itself under perfdhcp.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // -metrics also serves /debug/pprof for profiling runs
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "dhcp bench server:", err)
		os.Exit(1)
	}
}

// benchFlags are the server's command line.
type benchFlags struct {
	addr, iface, serverIP           *string
	workers, queue                  *int
	poolDB, poolStart, poolEnd, net *string
	metrics                         *string
	debug                           *bool
	inventory, macs, firstIP        *string
	clients                         *int
}

func parseFlags() benchFlags {
	f := benchFlags{
		addr:      flag.String("listen", "0.0.0.0:67", "listen address"),
		iface:     flag.String("iface", "", "interface to bind (SO_BINDTODEVICE)"),
		serverIP:  flag.String("server-ip", "", "server identity (default: interface address)"),
		workers:   flag.Int("workers", 0, "worker goroutines (0: dhcpd default, 256 with -pool-db)"),
		queue:     flag.Int("queue", 0, "queue size (0: dhcpd default)"),
		poolDB:    flag.String("pool-db", "", "lease file: serve a dynamic pool instead of reservations"),
		poolStart: flag.String("pool-start", "10.88.1.0", "first pool address"),
		poolEnd:   flag.String("pool-end", "10.88.250.255", "last pool address"),
		net:       flag.String("network", "10.88.0.0/16", "the pool's network: relays' giaddr must lie in it"),
		metrics:   flag.String("metrics", "", "serve /metrics and /debug/pprof on this address"),
		debug:     flag.Bool("debug", false, "debug logging"),
		inventory: flag.String("inventory", "", "write an inventory CSV for `bootctl serve` (topology sunway) and exit"),
		macs:      flag.String("macs", "", "with -inventory: write the same MACs, one a line, for perfdhcp -M"),
		clients:   flag.Int("clients", 20000, "with -inventory: number of nodes"),
		firstIP:   flag.String("first-ip", "", "with -inventory: address of the first node, the next ones follow (empty: no ip, pool mode)"),
	}
	flag.Parse()
	return f
}

func run() error {
	f := parseFlags()
	if *f.inventory != "" {
		return writeInventory(*f.inventory, *f.macs, *f.clients, *f.firstIP)
	}
	logCfg := zap.NewProductionConfig()
	if *f.debug {
		logCfg.Level = zap.NewAtomicLevelAt(zap.DebugLevel)
	}
	log, err := logCfg.Build()
	if err != nil {
		return err
	}
	defer log.Sync()

	reg := prometheus.NewRegistry()
	cfg := dhcpd.Config{
		Addr: *f.addr, Interface: *f.iface, Workers: *f.workers, QueueSize: *f.queue,
		Logger: log, Registerer: reg,
		Boot: dhcpd.BootConfig{HTTPPort: 8080},
	}
	if *f.serverIP != "" {
		cfg.ServerIP = net.ParseIP(*f.serverIP)
	}
	if *f.poolDB != "" {
		pool, err := openPool(&cfg, f, reg)
		if err != nil {
			return err
		}
		defer pool.Close()
	} else {
		cfg.Reservations = dhcpd.ReservationsFunc(reservationOf)
	}
	srv, err := dhcpd.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *f.metrics != "" {
		http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		go http.ListenAndServe(*f.metrics, nil)
	}
	return srv.Serve(ctx)
}

// openPool opens the lease file and sets cfg up to serve its pool.
func openPool(cfg *dhcpd.Config, f benchFlags, reg prometheus.Registerer) (*dhcpd.Pool, error) {
	p, err := netip.ParsePrefix(*f.net)
	if err != nil {
		return nil, fmt.Errorf("-network: %w", err)
	}
	pool, err := dhcpd.OpenPool(*f.poolDB, net.ParseIP(*f.poolStart), net.ParseIP(*f.poolEnd),
		dhcpd.PoolOptions{LeaseTime: time.Hour, Registerer: reg})
	if err != nil {
		return nil, err
	}
	cfg.Pool = pool
	if cfg.Workers == 0 {
		cfg.Workers = 256 // as bootctl serve with a pool: a worker waits for its lease's fsync
	}
	cfg.PoolNetwork = dhcpd.Reservation{Mask: net.CIDRMask(p.Bits(), 32)}
	cfg.Networks = []netip.Prefix{p.Masked()}
	return pool, nil
}

// reservationOf makes every MAC ours; its address comes from its last three bytes.
func reservationOf(m net.HardwareAddr) (dhcpd.Reservation, bool) {
	if len(m) != 6 {
		return dhcpd.Reservation{}, false
	}
	return dhcpd.Reservation{
		Name: fmt.Sprintf("n%02x%02x%02x", m[3], m[4], m[5]),
		IP:   net.IPv4(10, 100+m[3]%100, m[4], m[5]), Mask: net.CIDRMask(8, 32),
	}, true
}

// writeInventory writes n nodes of the sunway machine (positions in order, MACs 00:0c:01:xx:xx:xx)
// to path as a bootctl inventory, and their MACs to macs for perfdhcp -M.
func writeInventory(path, macs string, n int, firstIP string) error {
	m, err := topology.Load("sunway")
	if err != nil {
		return err
	}
	g, err := m.Build()
	if err != nil {
		return err
	}
	h := g.Hierarchy()
	if n > h.NumNodes() || n > 1<<24 {
		return fmt.Errorf("-clients %d: the sunway machine has %d nodes", n, h.NumNodes())
	}
	var ip netip.Addr
	if firstIP != "" {
		if ip, err = netip.ParseAddr(firstIP); err != nil {
			return fmt.Errorf("-first-ip: %w", err)
		}
	}
	inv, list := []byte("name,mac,ip,node\n"), []byte{}
	for i := 0; i < n; i++ {
		mac := fmt.Sprintf("00:0c:01:%02x:%02x:%02x", byte(i>>16), byte(i>>8), byte(i))
		a := ""
		if ip.IsValid() {
			a, ip = ip.String(), ip.Next()
		}
		inv = fmt.Appendf(inv, "n%d,%s,%s,%s\n", i, mac, a, h.NodeName(i))
		list = fmt.Appendf(list, "%s\n", mac)
	}
	if err := os.WriteFile(path, inv, 0o644); err != nil {
		return err
	}
	if macs != "" {
		return os.WriteFile(macs, list, 0o644)
	}
	return nil
}
