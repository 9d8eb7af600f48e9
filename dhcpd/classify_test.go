package dhcpd

import (
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

var (
	testMAC    = net.HardwareAddr{0x52, 0x54, 0x00, 0x12, 0x34, 0x56}
	testServer = net.IPv4(10, 0, 0, 1).To4()
)

func discover(t testing.TB, mods ...dhcpv4.Modifier) *dhcpv4.DHCPv4 {
	t.Helper()
	d, err := dhcpv4.NewDiscovery(testMAC, mods...)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func vendor(s string) dhcpv4.Modifier { return dhcpv4.WithOption(dhcpv4.OptClassIdentifier(s)) }
func arch(a ...iana.Arch) dhcpv4.Modifier {
	return dhcpv4.WithOption(dhcpv4.OptClientArch(a...))
}
func generic(code uint8, v []byte) dhcpv4.Modifier {
	return dhcpv4.WithGeneric(dhcpv4.GenericOptionCode(code), v)
}

func TestClassify(t *testing.T) {
	guid := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	base := BootConfig{HTTPPort: 8080}
	snp := base
	snp.EFIx64File = "snponly.efi"
	custom := base
	custom.IPXEUserClass = "bootfabric"
	custom.IPXEScriptURL = "http://{server}:{port}/ipxe/{name}?arch={arch}"
	plain := base
	plain.PlainFile = "pxelinux.0"

	tests := []struct {
		name string
		cfg  BootConfig
		req  []dhcpv4.Modifier
		want BootChoice
	}{
		{"bios pxe", base, []dhcpv4.Modifier{vendor("PXEClient:Arch:00000:UNDI:002001"), arch(iana.INTEL_X86PC)},
			BootChoice{Kind: KindPXE, Arch: 0, ArchKnown: true, BootFile: "undionly.kpxe", VendorClass: "PXEClient"}},
		{"pxe without option 93 is bios", base, []dhcpv4.Modifier{vendor("PXEClient")},
			BootChoice{Kind: KindPXE, BootFile: "undionly.kpxe", VendorClass: "PXEClient"}},
		{"uefi x64 arch 7", base, []dhcpv4.Modifier{vendor("PXEClient:Arch:00007:UNDI:003016"), arch(iana.EFI_X86_64)},
			BootChoice{Kind: KindPXE, Arch: 7, ArchKnown: true, BootFile: "ipxe.efi", VendorClass: "PXEClient"}},
		{"uefi x64 arch 9 snponly", snp, []dhcpv4.Modifier{vendor("PXEClient:Arch:00009:UNDI:003016"), arch(iana.EFI_BC)},
			BootChoice{Kind: KindPXE, Arch: 9, ArchKnown: true, BootFile: "snponly.efi", VendorClass: "PXEClient"}},
		{"uefi ia32", base, []dhcpv4.Modifier{vendor("PXEClient:Arch:00006"), arch(iana.EFI_IA32)},
			BootChoice{Kind: KindPXE, Arch: 6, ArchKnown: true, BootFile: "ipxe-i386.efi", VendorClass: "PXEClient"}},
		{"uefi arm64", base, []dhcpv4.Modifier{vendor("PXEClient:Arch:00011:UNDI:003000"), arch(iana.EFI_ARM64)},
			BootChoice{Kind: KindPXE, Arch: 11, ArchKnown: true, BootFile: "ipxe-arm64.efi", VendorClass: "PXEClient"}},
		{"unknown arch gets no file", base, []dhcpv4.Modifier{vendor("PXEClient:Arch:00010"), arch(iana.EFI_ARM32)},
			BootChoice{Kind: KindPXE, Arch: 10, ArchKnown: true, VendorClass: "PXEClient"}},
		{"first of several archs", base, []dhcpv4.Modifier{vendor("PXEClient"), arch(iana.EFI_X86_64, iana.INTEL_X86PC)},
			BootChoice{Kind: KindPXE, Arch: 7, ArchKnown: true, BootFile: "ipxe.efi", VendorClass: "PXEClient"}},
		{"malformed option 93 is bios", base, []dhcpv4.Modifier{vendor("PXEClient"), generic(93, []byte{7})},
			BootChoice{Kind: KindPXE, BootFile: "undionly.kpxe", VendorClass: "PXEClient"}},
		{"uefi http boot x64", base, []dhcpv4.Modifier{vendor("HTTPClient:Arch:00016:UNDI:003001"), arch(iana.EFI_X86_64_HTTP)},
			BootChoice{Kind: KindHTTP, Arch: 16, ArchKnown: true, BootFile: "http://10.0.0.1:8080/ipxe/bin/ipxe.efi", VendorClass: "HTTPClient"}},
		{"uefi http boot arm64 by arch only", base, []dhcpv4.Modifier{arch(iana.EFI_ARM64_HTTP)},
			BootChoice{Kind: KindHTTP, Arch: 19, ArchKnown: true, BootFile: "http://10.0.0.1:8080/ipxe/bin/ipxe-arm64.efi", VendorClass: "HTTPClient"}},
		{"http boot unknown arch no url", base, []dhcpv4.Modifier{vendor("HTTPClient"), arch(iana.EFI_ARM32_HTTP)},
			BootChoice{Kind: KindHTTP, Arch: 18, ArchKnown: true, VendorClass: "HTTPClient"}},
		{"ipxe user class breaks the loop", base, []dhcpv4.Modifier{vendor("PXEClient:Arch:00007:UNDI:003010"), arch(iana.EFI_X86_64), generic(77, []byte("iPXE"))},
			BootChoice{Kind: KindIPXE, Arch: 7, ArchKnown: true, BootFile: "http://10.0.0.1:8080/ipxe/52:54:00:12:34:56", VendorClass: "PXEClient", IPXENoProxyWait: true}},
		{"ipxe rfc3004 user class", base, []dhcpv4.Modifier{vendor("PXEClient"), dhcpv4.WithUserClass("iPXE", true)},
			BootChoice{Kind: KindIPXE, BootFile: "http://10.0.0.1:8080/ipxe/52:54:00:12:34:56", VendorClass: "PXEClient", IPXENoProxyWait: true}},
		{"ipxe by option 175", base, []dhcpv4.Modifier{vendor("PXEClient"), generic(175, []byte{177, 5, 1, 0x80, 0x86, 0x10, 0x0e})},
			BootChoice{Kind: KindIPXE, BootFile: "http://10.0.0.1:8080/ipxe/52:54:00:12:34:56", VendorClass: "PXEClient", IPXENoProxyWait: true}},
		{"ipxe over http boot echoes HTTPClient", base, []dhcpv4.Modifier{vendor("HTTPClient"), arch(iana.EFI_X86_64_HTTP), generic(77, []byte("iPXE"))},
			BootChoice{Kind: KindIPXE, Arch: 16, ArchKnown: true, BootFile: "http://10.0.0.1:8080/ipxe/52:54:00:12:34:56", VendorClass: "HTTPClient", IPXENoProxyWait: true}},
		{"configured user class and template", custom, []dhcpv4.Modifier{vendor("PXEClient"), arch(iana.EFI_X86_64), generic(77, []byte("bootfabric"))},
			BootChoice{Kind: KindIPXE, Arch: 7, ArchKnown: true, BootFile: "http://10.0.0.1:8080/ipxe/node-7?arch=7", VendorClass: "PXEClient", IPXENoProxyWait: true}},
		{"iPXE class is plain pxe when another class is configured", custom, []dhcpv4.Modifier{vendor("PXEClient"), generic(77, []byte("iPXE"))},
			BootChoice{Kind: KindPXE, BootFile: "undionly.kpxe", VendorClass: "PXEClient"}},
		{"guid echoed", base, []dhcpv4.Modifier{vendor("PXEClient"), arch(iana.INTEL_X86PC), generic(97, guid)},
			BootChoice{Kind: KindPXE, ArchKnown: true, BootFile: "undionly.kpxe", VendorClass: "PXEClient", GUID: guid}},
		{"plain client no file", base, nil, BootChoice{Kind: KindPlain}},
		{"plain client configured file", plain, []dhcpv4.Modifier{vendor("udhcp 1.35.0")}, BootChoice{Kind: KindPlain, BootFile: "pxelinux.0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Classify(discover(t, tc.req...), tc.cfg, testServer, "node-7")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Classify mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBootConfigDefaults(t *testing.T) {
	got := BootConfig{}.withDefaults()
	want := BootConfig{
		BIOSFile: "undionly.kpxe", EFIx64File: "ipxe.efi", EFIIA32File: "ipxe-i386.efi", EFIArm64File: "ipxe-arm64.efi",
		IPXEUserClass: "iPXE", IPXEScriptURL: "http://{server}:{port}/ipxe/{mac}",
		HTTPBootURL: "http://{server}:{port}/ipxe/bin/{file}", HTTPPort: 80,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}
