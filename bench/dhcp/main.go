// Command dhcp is the benchmark server for bench/dhcp/run.sh: a dhcpd.Server
// that owns every MAC (reservation mode, address derived from the MAC) or
// hands out addresses from a bbolt-backed pool.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof" // -metrics also serves /debug/pprof for profiling runs
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
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

func run() error {
	addr := flag.String("listen", "0.0.0.0:67", "listen address")
	iface := flag.String("iface", "", "interface to bind (SO_BINDTODEVICE)")
	serverIP := flag.String("server-ip", "", "server identity (default: interface address)")
	workers := flag.Int("workers", 0, "worker goroutines (0: dhcpd default)")
	queue := flag.Int("queue", 0, "queue size (0: dhcpd default)")
	poolDB := flag.String("pool-db", "", "lease file: serve a dynamic pool instead of reservations")
	poolStart := flag.String("pool-start", "10.88.1.0", "first pool address")
	poolEnd := flag.String("pool-end", "10.88.250.255", "last pool address")
	batch := flag.Duration("batch", 2*time.Millisecond, "pool write batching delay (0: one fsync per write)")
	metrics := flag.String("metrics", "", "serve /metrics and /debug/pprof on this address")
	debug := flag.Bool("debug", false, "debug logging")
	flag.Parse()

	logCfg := zap.NewProductionConfig()
	if *debug {
		logCfg.Level = zap.NewAtomicLevelAt(zap.DebugLevel)
	}
	log, err := logCfg.Build()
	if err != nil {
		return err
	}
	defer log.Sync()

	reg := prometheus.NewRegistry()
	cfg := dhcpd.Config{
		Addr: *addr, Interface: *iface, Workers: *workers, QueueSize: *queue,
		Logger: log, Registerer: reg,
		Boot: dhcpd.BootConfig{HTTPPort: 8080},
	}
	if *serverIP != "" {
		cfg.ServerIP = net.ParseIP(*serverIP)
	}
	if *poolDB != "" {
		pool, err := dhcpd.OpenPool(*poolDB, net.ParseIP(*poolStart), net.ParseIP(*poolEnd),
			dhcpd.PoolOptions{LeaseTime: time.Hour, BatchDelay: *batch})
		if err != nil {
			return err
		}
		defer pool.Close()
		cfg.Pool = pool
		cfg.PoolNetwork = dhcpd.Reservation{Mask: net.CIDRMask(16, 32)}
	} else {
		// Every MAC is ours; its address comes from its last three bytes.
		cfg.Reservations = dhcpd.ReservationsFunc(func(m net.HardwareAddr) (dhcpd.Reservation, bool) {
			if len(m) != 6 {
				return dhcpd.Reservation{}, false
			}
			return dhcpd.Reservation{
				Name: fmt.Sprintf("n%02x%02x%02x", m[3], m[4], m[5]),
				IP:   net.IPv4(10, 100+m[3]%100, m[4], m[5]), Mask: net.CIDRMask(8, 32),
			}, true
		})
	}
	srv, err := dhcpd.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *metrics != "" {
		http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		go http.ListenAndServe(*metrics, nil)
	}
	return srv.Serve(ctx)
}
