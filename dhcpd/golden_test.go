package dhcpd

import (
	"bufio"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/replies.golden from the current code")

// goldenClass is a boot client as it shows itself in its requests.
type goldenClass struct {
	name string
	mods []dhcpv4.Modifier
}

func goldenClasses() []goldenClass {
	guid := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	return []goldenClass{
		{"plain", nil},
		{"pxe-bios", []dhcpv4.Modifier{vendor("PXEClient:Arch:00000:UNDI:002001"), arch(iana.INTEL_X86PC), generic(97, guid)}},
		{"pxe-efi64", []dhcpv4.Modifier{vendor("PXEClient:Arch:00007:UNDI:003016"), arch(iana.EFI_X86_64)}},
		{"pxe-arm64", []dhcpv4.Modifier{vendor("PXEClient:Arch:00011:UNDI:003016"), arch(iana.EFI_ARM64)}},
		{"pxe-unknown-arch", []dhcpv4.Modifier{vendor("PXEClient:Arch:00099"), arch(iana.Arch(99))}},
		{"http", []dhcpv4.Modifier{vendor("HTTPClient:Arch:00016:UNDI:003016"), arch(iana.EFI_X86_64_HTTP), generic(97, guid)}},
		{"http-arch-only", []dhcpv4.Modifier{arch(iana.EFI_X86_64_HTTP)}},
		{"ipxe", []dhcpv4.Modifier{vendor("PXEClient:Arch:00007:UNDI:003010"), arch(iana.EFI_X86_64), generic(77, []byte("iPXE"))}},
		{"ipxe-175", []dhcpv4.Modifier{vendor("PXEClient:Arch:00000:UNDI:002001"), arch(iana.INTEL_X86PC), generic(175, []byte{177, 5, 1, 0x80, 0x86, 0x10, 0x0e})}},
		{"ipxe-http", []dhcpv4.Modifier{vendor("HTTPClient:Arch:00016"), arch(iana.EFI_X86_64_HTTP), generic(77, []byte("iPXE"))}},
	}
}

func goldenConfigs() map[string]BootConfig {
	return map[string]BootConfig{
		"default": {},
		"custom": {
			EFIx64File: "snponly.efi", PlainFile: "pxelinux.0", HTTPPort: 8080,
			IPXEScriptURL: "http://{server}:{port}/ipxe/{name}?arch={arch}&token={token}",
			HTTPBootURL:   "http://{server}:{port}/boot/{mac}/{file}",
			Token:         func(mac net.HardwareAddr) string { return "tok-" + strings.ReplaceAll(mac.String(), ":", "") },
		},
	}
}

// goldenStep is one request of a scenario and where it arrives.
type goldenStep struct {
	name    string
	mac     net.HardwareAddr
	mt      dhcpv4.MessageType
	mods    []dhcpv4.Modifier
	in      Ingress
	advance time.Duration // the pool's clock moves this much before the request
}

var (
	goldenPoolMAC = net.HardwareAddr{2, 0, 0, 0, 0, 1}
	goldenKnown   = net.HardwareAddr{0x52, 0x54, 0x00, 0, 0, 0x77} // reserved, no address: pool
)

func goldenScenarios() map[string][]goldenStep {
	dhcp := Ingress{ServerIP: testServer}
	boot := Ingress{ServerIP: testServer, BootServer: true}
	reqIP := func(ip net.IP) dhcpv4.Modifier { return dhcpv4.WithOption(dhcpv4.OptRequestedIPAddress(ip)) }
	sid := dhcpv4.WithOption(dhcpv4.OptServerIdentifier(testServer))
	// The relay is the router (10.0.0.254): a relay at the server's own address
	// (10.0.0.1) is refused since issue 25.
	relay := []dhcpv4.Modifier{giaddr(net.IPv4(10, 0, 0, 254)),
		dhcpv4.WithOption(dhcpv4.OptRelayAgentInfo(dhcpv4.OptGeneric(dhcpv4.GenericOptionCode(1), []byte("port7")))),
		dhcpv4.WithOption(dhcpv4.OptClientIdentifier([]byte{1, 0x52, 0x54, 0, 0x12, 0x34, 0x56}))}
	pooled := net.IPv4(10, 0, 1, 10)
	return map[string][]goldenStep{
		"reserved": {
			{name: "discover", mac: testMAC, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "discover-broadcast", mac: testMAC, mt: dhcpv4.MessageTypeDiscover, mods: []dhcpv4.Modifier{dhcpv4.WithBroadcast(true)}, in: dhcp},
			{name: "request", mac: testMAC, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{reqIP(testRes.IP), sid}, in: dhcp},
			{name: "renew", mac: testMAC, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{dhcpv4.WithClientIP(testRes.IP)}, in: dhcp},
			{name: "request-wrong-ip", mac: testMAC, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{reqIP(net.IPv4(10, 9, 9, 9))}, in: dhcp},
			{name: "request-no-ip", mac: testMAC, mt: dhcpv4.MessageTypeRequest, in: dhcp},
			{name: "inform", mac: testMAC, mt: dhcpv4.MessageTypeInform, mods: []dhcpv4.Modifier{dhcpv4.WithClientIP(testRes.IP)}, in: dhcp},
		},
		"relayed": {
			{name: "discover", mac: testMAC, mt: dhcpv4.MessageTypeDiscover, mods: relay, in: dhcp},
			{name: "request", mac: testMAC, mt: dhcpv4.MessageTypeRequest, mods: append([]dhcpv4.Modifier{reqIP(testRes.IP)}, relay...), in: dhcp},
			{name: "request-wrong-ip", mac: testMAC, mt: dhcpv4.MessageTypeRequest, mods: append([]dhcpv4.Modifier{reqIP(net.IPv4(10, 0, 0, 99))}, relay...), in: dhcp},
		},
		"pool": {
			{name: "discover", mac: goldenPoolMAC, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "request", mac: goldenPoolMAC, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{reqIP(pooled), sid}, in: dhcp},
			{name: "request-cached", mac: goldenPoolMAC, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{reqIP(pooled), sid}, in: dhcp, advance: 20 * time.Minute},
			{name: "request-taken", mac: goldenKnown, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{reqIP(pooled)}, in: dhcp},
			{name: "known-discover", mac: goldenKnown, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "known-request", mac: goldenKnown, mt: dhcpv4.MessageTypeRequest, mods: []dhcpv4.Modifier{reqIP(net.IPv4(10, 0, 1, 11))}, in: dhcp},
			{name: "relayed-discover", mac: goldenPoolMAC, mt: dhcpv4.MessageTypeDiscover, mods: relay, in: dhcp},
			{name: "reserved-discover", mac: testMAC, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "release", mac: goldenPoolMAC, mt: dhcpv4.MessageTypeRelease, mods: []dhcpv4.Modifier{dhcpv4.WithClientIP(pooled)}, in: dhcp},
			{name: "rediscover", mac: goldenPoolMAC, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "decline", mac: goldenKnown, mt: dhcpv4.MessageTypeDecline, mods: []dhcpv4.Modifier{reqIP(net.IPv4(10, 0, 1, 11))}, in: dhcp},
			{name: "known-rediscover", mac: goldenKnown, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "reserved-release", mac: testMAC, mt: dhcpv4.MessageTypeRelease, mods: []dhcpv4.Modifier{dhcpv4.WithClientIP(testRes.IP)}, in: dhcp},
		},
		"proxy": {
			{name: "discover", mac: testMAC, mt: dhcpv4.MessageTypeDiscover, in: dhcp},
			{name: "request-4011", mac: testMAC, mt: dhcpv4.MessageTypeRequest, in: boot},
			{name: "inform-4011", mac: testMAC, mt: dhcpv4.MessageTypeInform, mods: []dhcpv4.Modifier{dhcpv4.WithClientIP(net.IPv4(10, 0, 5, 5))}, in: boot},
		},
	}
}

// goldenHandler builds the handler of a scenario; the pool's clock is clk.
func goldenHandler(t *testing.T, scenario string, boot BootConfig, clk *fakeClock) *Handler {
	t.Helper()
	res := StaticReservations{macKey(testMAC): testRes, macKey(goldenKnown): {Name: "node-p", Domain: "pool.test"}}
	cfg := Config{Boot: boot, Reservations: res}
	switch scenario {
	case "proxy":
		cfg.Mode = ModeProxy
	case "pool":
		cfg.Pool = openTestPool(t, filepath.Join(t.TempDir(), "leases.db"), "10.0.1.10", "10.0.1.20", clk)
		t.Cleanup(func() { cfg.Pool.(*Pool).Close() })
		cfg.PoolNetwork = Reservation{Name: "ignored", Mask: net.CIDRMask(24, 32), Router: net.IPv4(10, 0, 1, 1),
			DNS: []net.IP{net.IPv4(10, 0, 1, 53), net.IPv4(10, 0, 1, 54)}, Domain: "dyn.test"}
		cfg.Networks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16")}
	}
	return NewHandler(cfg)
}

// goldenLines runs every scenario for every boot class and configuration and returns one line
// per request: its name, the decision, and the reply's bytes.
func goldenLines(t *testing.T) []string {
	var lines []string
	configs := goldenConfigs()
	scenarios := goldenScenarios()
	for _, cfgName := range []string{"default", "custom"} {
		for _, sc := range []string{"reserved", "relayed", "pool", "proxy"} {
			if cfgName == "custom" && (sc == "relayed" || sc == "pool") {
				continue // the templates change only the boot file, which the other two show
			}
			for _, cl := range goldenClasses() {
				clk := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
				h := goldenHandler(t, sc, configs[cfgName], clk)
				for i, st := range scenarios[sc] {
					clk.t = clk.t.Add(st.advance)
					mods := append([]dhcpv4.Modifier{dhcpv4.WithTransactionID(dhcpv4.TransactionID{0xb0, 0x07, byte(i), 0x01})}, cl.mods...)
					req := request(t, st.mac, st.mt, append(mods, st.mods...)...)
					d := h.Handle(context.Background(), req, st.in)
					reply := "-"
					if d.Reply != nil {
						reply = hex.EncodeToString(d.Reply.ToBytes())
					}
					lines = append(lines, fmt.Sprintf("%s/%s/%s/%s %s ip=%v node=%q err=%v %s",
						cfgName, sc, cl.name, st.name, d.Outcome, d.IP, d.Node, d.Err, reply))
				}
			}
		}
	}
	return lines
}

// TestRepliesGolden holds every reply the handler builds, for every boot class (plain, PXE per
// architecture, UEFI HTTP boot, iPXE by user class and by option 175) and packet (DISCOVER,
// REQUEST, renewal, NAK, INFORM) in reservation, relayed, pool and proxy scenarios, to the bytes
// recorded in testdata/replies.golden: refactoring how replies are built must not change one
// byte. Run with -update to record a deliberate change (and review the diff).
func TestRepliesGolden(t *testing.T) {
	got := goldenLines(t)
	path := filepath.Join("testdata", "replies.golden")
	if *updateGolden {
		if err := os.WriteFile(path, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		want = append(want, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d replies, golden file has %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("reply %d differs from the golden file (-want +got):\n%s", i, cmp.Diff(want[i], got[i]))
		}
	}
}
