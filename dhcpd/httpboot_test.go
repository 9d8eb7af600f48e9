package dhcpd

import (
	"context"
	"fmt"
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// edk2OfferType classifies a reply the way EDK II's HTTP boot client does (NetworkPkg
// HttpBootDxe, HttpBootParseDhcp4Packet, after the UEFI spec's table of HTTP boot offers): an
// offer is an HTTP offer when option 60 starts with "HTTPClient", a proxy offer when yiaddr is
// zero, a DNS offer when it has option 6; its URI is option 67, else the file field, and is
// "IP" when its host is an address literal. The client boots at once from a "DhcpIpUri" or
// "DhcpIpUriDns" offer, or from a "ProxyIpUri" offer beside another server's address offer; a
// non-HTTP offer ("DhcpOnly", "DhcpDns") gives an address and no boot file.
func edk2OfferType(t *testing.T, d *dhcpv4.DHCPv4) string {
	t.Helper()
	p, err := dhcpv4.FromBytes(d.ToBytes())
	if err != nil {
		t.Fatalf("reply does not parse: %v", err)
	}
	isHTTP := strings.HasPrefix(string(p.Options.Get(dhcpv4.OptionClassIdentifier)), "HTTPClient")
	isProxy := p.YourIPAddr == nil || p.YourIPAddr.IsUnspecified()
	dns := ""
	if p.Options.Has(dhcpv4.OptionDomainNameServer) {
		dns = "Dns"
	}
	if !isHTTP {
		if isProxy {
			return "invalid" // EDK II drops a proxy offer that is not an HTTP offer
		}
		return "DhcpOnly" + dns
	}
	uri := string(p.Options.Get(dhcpv4.OptionBootfileName))
	if uri == "" {
		uri = p.BootFileName
	}
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return "invalid URI " + uri // EDK II's HttpParseUrl rejects it and the offer is dropped
	}
	kind := "NameUri"
	if _, err := netip.ParseAddr(u.Hostname()); err == nil {
		kind = "IpUri"
	}
	if isProxy {
		return "Proxy" + kind
	}
	return "Dhcp" + kind + dns
}

// httpBootAnswer is what an HTTP boot reply is checked for.
type httpBootAnswer struct {
	Outcome   Outcome
	Type      string
	YIAddr    string
	URL       string // option 67
	File      string // the file field
	Vendor    string // option 60
	TFTPName  bool   // option 66 present (must not be: there is no TFTP step)
	PXEVendor bool   // option 43 present (PXE boot-server discovery control; not for HTTP)
	EDK2      string // edk2OfferType
}

// TestHTTPBootAnswers sends the DHCP packets of UEFI HTTP boot firmware (option 60
// "HTTPClient:Arch:000NN:UNDI:003001", option 93 with an HTTP architecture type, as EDK II's
// HttpBootDxe sends them) through the Handler in reservation and proxy mode, per architecture,
// and checks the answer EDK II will act on: the boot file as a full URL of this server's
// /ipxe/bin/ for the architecture's EFI application, option 60 echoed as "HTTPClient", no TFTP
// server name and no PXE vendor options.
func TestHTTPBootAnswers(t *testing.T) {
	res := StaticReservations{macKey(testMAC): testRes}
	in := Ingress{ServerIP: testServer}
	boot := BootConfig{HTTPBootURL: "http://10.0.0.1:8080/ipxe/bin/{file}"}
	snp := boot
	snp.EFIx64File = "snponly.efi"
	named := BootConfig{HTTPBootURL: "http://boot.cluster.test/ipxe/bin/{file}"}
	httpc := func(a iana.Arch) []dhcpv4.Modifier {
		return []dhcpv4.Modifier{vendor(fmt.Sprintf("HTTPClient:Arch:%05d:UNDI:003001", a)), arch(a)}
	}
	reqIP := dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(testRes.IP))
	sid := dhcpv4.WithOption(dhcpv4.OptServerIdentifier(testServer))

	tests := []struct {
		name string
		mode Mode
		boot BootConfig
		mt   dhcpv4.MessageType
		bs   bool // on the proxyDHCP port 4011
		req  []dhcpv4.Modifier
		want httpBootAnswer
	}{
		{"x64 discover", ModeReservation, boot, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_X86_64_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "HTTPClient", false, false, "DhcpIpUriDns"}},
		{"x64 request", ModeReservation, boot, dhcpv4.MessageTypeRequest, false, append(httpc(iana.EFI_X86_64_HTTP), reqIP, sid),
			httpBootAnswer{OutcomeAcked, "ACK", "10.0.0.17", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "HTTPClient", false, false, "DhcpIpUriDns"}},
		{"x64 snponly", ModeReservation, snp, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_X86_64_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "http://10.0.0.1:8080/ipxe/bin/snponly.efi", "http://10.0.0.1:8080/ipxe/bin/snponly.efi", "HTTPClient", false, false, "DhcpIpUriDns"}},
		{"ia32", ModeReservation, boot, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_X86_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "http://10.0.0.1:8080/ipxe/bin/ipxe-i386.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe-i386.efi", "HTTPClient", false, false, "DhcpIpUriDns"}},
		{"arm64", ModeReservation, boot, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_ARM64_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "http://10.0.0.1:8080/ipxe/bin/ipxe-arm64.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe-arm64.efi", "HTTPClient", false, false, "DhcpIpUriDns"}},
		{"arch type 16 without option 60", ModeReservation, boot, dhcpv4.MessageTypeDiscover, false, []dhcpv4.Modifier{arch(iana.EFI_X86_64_HTTP)},
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "HTTPClient", false, false, "DhcpIpUriDns"}},
		{"arm32: address, no boot file", ModeReservation, boot, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_ARM32_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "", "", "HTTPClient", false, false, "invalid URI "}},
		{"host name URL", ModeReservation, named, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_X86_64_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "10.0.0.17", "http://boot.cluster.test/ipxe/bin/ipxe.efi", "http://boot.cluster.test/ipxe/bin/ipxe.efi", "HTTPClient", false, false, "DhcpNameUriDns"}},
		{"proxy offer", ModeProxy, boot, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_X86_64_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "0.0.0.0", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "HTTPClient", false, false, "ProxyIpUri"}},
		{"proxy arm64", ModeProxy, boot, dhcpv4.MessageTypeDiscover, false, httpc(iana.EFI_ARM64_HTTP),
			httpBootAnswer{OutcomeOffered, "OFFER", "0.0.0.0", "http://10.0.0.1:8080/ipxe/bin/ipxe-arm64.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe-arm64.efi", "HTTPClient", false, false, "ProxyIpUri"}},
		{"proxy request on 4011", ModeProxy, boot, dhcpv4.MessageTypeRequest, true, httpc(iana.EFI_X86_64_HTTP),
			httpBootAnswer{OutcomeAcked, "ACK", "0.0.0.0", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", "HTTPClient", false, false, "ProxyIpUri"}},
		{"proxy ignores a discover on 4011", ModeProxy, boot, dhcpv4.MessageTypeDiscover, true, httpc(iana.EFI_X86_64_HTTP),
			httpBootAnswer{Outcome: OutcomeIgnored}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHandler(Config{Mode: tc.mode, Boot: tc.boot, Reservations: res})
			ing := in
			ing.BootServer = tc.bs
			d := h.Handle(context.Background(), request(t, testMAC, tc.mt, tc.req...), ing)
			got := httpBootAnswer{Outcome: d.Outcome}
			if d.Reply != nil {
				r := d.Reply
				got.Type, got.YIAddr, got.File = r.MessageType().String(), r.YourIPAddr.String(), r.BootFileName
				got.URL = string(r.Options.Get(dhcpv4.OptionBootfileName))
				got.Vendor = string(r.Options.Get(dhcpv4.OptionClassIdentifier))
				got.TFTPName = r.Options.Has(dhcpv4.OptionTFTPServerName)
				got.PXEVendor = r.Options.Has(dhcpv4.OptionVendorSpecificInformation)
				got.EDK2 = edk2OfferType(t, r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHTTPBootNotOurs: an HTTP boot client this server has no reservation for gets silence in
// both modes, so that the server that owns it answers alone.
func TestHTTPBootNotOurs(t *testing.T) {
	res := StaticReservations{macKey(testMAC): testRes}
	for _, mode := range []Mode{ModeReservation, ModeProxy} {
		h := NewHandler(Config{Mode: mode, Reservations: res})
		req := request(t, otherMAC, dhcpv4.MessageTypeDiscover, vendor("HTTPClient:Arch:00016:UNDI:003001"), arch(iana.EFI_X86_64_HTTP))
		if d := h.Handle(context.Background(), req, Ingress{ServerIP: testServer}); d.Reply != nil || d.Outcome != OutcomeNotOurs {
			t.Errorf("%s: outcome %s, reply %v; want silence (not_ours)", mode, d.Outcome, d.Reply != nil)
		}
	}
}
