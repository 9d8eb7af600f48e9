package bootsrv

import (
	"net"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/tftpd"
	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

func TestDHCPEvents(t *testing.T) {
	tests := []struct {
		t    dhcpv4.MessageType
		out  dhcpd.Outcome
		want []nodestate.Event
	}{
		{dhcpv4.MessageTypeDiscover, dhcpd.OutcomeOffered, []nodestate.Event{nodestate.EvDiscover, nodestate.EvOffer}},
		{dhcpv4.MessageTypeDiscover, dhcpd.OutcomeExhausted, []nodestate.Event{nodestate.EvDiscover}},
		{dhcpv4.MessageTypeDiscover, dhcpd.OutcomeDuplicate, nil},
		{dhcpv4.MessageTypeDiscover, dhcpd.OutcomeNotOurs, nil},
		{dhcpv4.MessageTypeDiscover, dhcpd.OutcomeNotPXE, nil},
		{dhcpv4.MessageTypeRequest, dhcpd.OutcomeAcked, []nodestate.Event{nodestate.EvAck}},
		{dhcpv4.MessageTypeRequest, dhcpd.OutcomeNaked, nil},
		{dhcpv4.MessageTypeRequest, dhcpd.OutcomeOtherServer, nil},
		{dhcpv4.MessageTypeInform, dhcpd.OutcomeAcked, nil},
		{dhcpv4.MessageTypeRelease, dhcpd.OutcomeReleased, nil},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, DHCPEvents(tc.t, tc.out)); diff != "" {
			t.Errorf("%v %v (-want +got):\n%s", tc.t, tc.out, diff)
		}
	}
}

func TestTFTPEvent(t *testing.T) {
	kind := func(p string) nodestate.Event {
		switch p {
		case "boot/default/vmlinuz":
			return nodestate.EvKernel
		case "boot/default/initrd.img":
			return nodestate.EvInitrd
		}
		return nodestate.EvNBP
	}
	tests := []struct {
		out  tftpd.Outcome
		path string
		want nodestate.Event
	}{
		{tftpd.OutcomeOK, "undionly.kpxe", nodestate.EvNBP},
		{tftpd.OutcomeOK, "boot/default/vmlinuz", nodestate.EvKernel},
		{tftpd.OutcomeOK, "boot/default/initrd.img", nodestate.EvInitrd},
		{tftpd.OutcomeProbe, "ipxe.efi", nodestate.EvProbe},
		{tftpd.OutcomeAborted, "ipxe.efi", nodestate.EvTransferFailed},
		{tftpd.OutcomeTimeout, "ipxe.efi", nodestate.EvTransferFailed},
		{tftpd.OutcomeNotFound, "missing.efi", nodestate.EvTransferRefused},
		{tftpd.OutcomeRefused, "", nodestate.EvTransferRefused},
	}
	for _, tc := range tests {
		if got := TFTPEvent(tc.out, tc.path, kind); got != tc.want {
			t.Errorf("%v %q: %v, want %v", tc.out, tc.path, got, tc.want)
		}
	}
}

func TestDHCPConfig(t *testing.T) {
	f := newFixture(t)
	s := f.server(t, func(c *bootconfig.Config) {
		c.HTTP.URL = "http://boot.example:8080"
		c.DHCP.Mode = dhcpd.ModeProxy
		c.DHCP.BIOSFile = "custom.kpxe"
	})
	c := s.dhcpConfig("eth1")
	if c.Mode != dhcpd.ModeProxy || c.Interface != "eth1" || !c.ServerIP.Equal(net.IPv4(127, 0, 0, 1)) || c.Boot.HTTPPort != 8080 ||
		c.Boot.IPXEScriptURL != "http://boot.example:8080/ipxe/{mac}?token={token}" || c.Boot.HTTPBootURL != "http://boot.example:8080/ipxe/bin/{file}" ||
		c.Boot.BIOSFile != "custom.kpxe" || c.Observer == nil || c.Registerer == nil {
		t.Errorf("dhcpd config: %+v", c)
	}
	mac, _ := net.ParseMAC("52:54:00:00:00:03")
	if r, ok := c.Reservations.Lookup(mac); !ok || r.Name != "node03" {
		t.Errorf("reservation of node03: %+v %v", r, ok)
	}
	if got := c.Boot.Token(mac); got != s.nodes.addressToken("node03") || got == "" {
		t.Errorf("proxy token of node03: %q", got)
	}
	// What iPXE is given: its script's URL with the node's token.
	req, err := dhcpv4.NewDiscovery(mac, dhcpv4.WithOption(dhcpv4.OptUserClass("iPXE")))
	if err != nil {
		t.Fatal(err)
	}
	bc := dhcpd.Classify(req, c.Boot, c.ServerIP, "node03")
	if want := "http://boot.example:8080/ipxe/52:54:00:00:00:03?token=" + s.nodes.addressToken("node03"); bc.BootFile != want {
		t.Errorf("iPXE boot file %q, want %q", bc.BootFile, want)
	}
}
