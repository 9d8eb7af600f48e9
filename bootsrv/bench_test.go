package bootsrv

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/topology"
)

// sunwayInventory lists every node of the sunway machine (40,960).
func sunwayInventory(b *testing.B) (*bootconfig.Inventory, *topology.Hierarchy) {
	b.Helper()
	m, _ := topology.Preset("sunway")
	g, err := m.Build()
	if err != nil {
		b.Fatal(err)
	}
	h := g.Hierarchy()
	var sb strings.Builder
	sb.WriteString("name,mac,ip,node\n")
	for i := 0; i < h.NumNodes(); i++ {
		fmt.Fprintf(&sb, "%s,52:54:00:%02x:%02x:%02x,10.%d.%d.%d,%s\n", h.NodeName(i), i>>16, (i>>8)&255, i&255, i>>16, (i>>8)&255, i&255, h.NodeName(i))
	}
	inv, err := bootconfig.ParseInventoryCSV([]byte(sb.String()), "sunway.csv", h)
	if err != nil {
		b.Fatal(err)
	}
	return inv, h
}

// BenchmarkReservationLookup is dhcpd's per-packet authority check on a 40,960-node inventory
// split over 160 servers (bcda).
func BenchmarkReservationLookup(b *testing.B) {
	inv, h := sunwayInventory(b)
	a, err := bootconfig.AssignServers(h, "bcda", 160, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	au, err := bootconfig.NewAuthority(inv, a, 7)
	if err != nil {
		b.Fatal(err)
	}
	res, err := au.Reservations(bootconfig.NetworkOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res.Lookup(inv.Nodes[i%len(inv.Nodes)].MAC)
	}
}

// BenchmarkIPXEScript serves /ipxe/{mac} through the whole handler.
func BenchmarkIPXEScript(b *testing.B) {
	f := newFixture(b)
	cfg, err := bootconfig.LoadConfig(f.cfgPath)
	if err != nil {
		b.Fatal(err)
	}
	cfg.HTTP.URL = "http://10.0.0.1:8080" // no Listen here, so no bound port
	s, err := New(cfg, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/ipxe/52:54:00:00:00:05", nil)
		req.RemoteAddr = "10.0.0.15:1000" // node05's address: the script goes to no other
		h.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatal(w.Code)
		}
	}
}
