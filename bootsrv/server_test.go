package bootsrv

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
)

func TestNewErrors(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, nil)
	// A second server on the same state directory.
	if _, err := New(f.config(t, nil), Options{}); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Errorf("second server on one state_dir: %v", err)
	}
	s.Close()
	// Reservation mode needs every owned node's address inside the subnet.
	c := f.config(t, nil)
	c.DHCP.Mode, c.DHCP.Subnet = dhcpd.ModeReservation, "10.0.0.0/24"
	if _, err := New(c, Options{}); err == nil || !strings.Contains(err.Error(), "inventory.csv:2: ip: 127.0.0.1 of node node00 is outside dhcp.subnet 10.0.0.0/24") {
		t.Errorf("address outside the subnet: %v", err)
	}
	// The state directory is free again after a failed New.
	s2 := f.server(t, nil)
	s2.Close()
}

func TestListenBusyPort(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) { c.HTTP.Listen = busy.Addr().String() })
	err = s.Serve(context.Background())
	if err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("serve on a busy port: %v", err)
	}
	if s.TFTPAddr() != nil {
		t.Error("TFTP socket left open after the failed Listen")
	}
}
