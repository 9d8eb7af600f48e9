package dhcpd

import (
	"bytes"
	"net"
	"strconv"
	"strings"

	"github.com/insomniacslk/dhcp/dhcpv4"
	"github.com/insomniacslk/dhcp/iana"
)

// ClientKind says what kind of boot client sent a request.
type ClientKind int

const (
	// KindPlain is an ordinary DHCP client (udhcpc, dhclient, an installed
	// OS): no option 60 PXEClient/HTTPClient and no iPXE user class.
	KindPlain ClientKind = iota
	// KindPXE is PXE firmware that fetches its boot file over TFTP.
	KindPXE
	// KindHTTP is UEFI HTTP boot firmware: the boot file is a full URL.
	KindHTTP
	// KindIPXE is iPXE (user class "iPXE" or option 175 present): it gets
	// the node's iPXE script URL, which breaks the chain-load loop.
	KindIPXE
)

func (k ClientKind) String() string {
	switch k {
	case KindPlain:
		return "plain"
	case KindPXE:
		return "pxe"
	case KindHTTP:
		return "http"
	case KindIPXE:
		return "ipxe"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// Vendor class identifiers (option 60) of boot firmware.
const (
	VendorPXEClient  = "PXEClient"
	VendorHTTPClient = "HTTPClient"
)

// DHCP option codes used here that dhcpv4 has no named constant for.
const (
	optIPXEEncap     = dhcpv4.GenericOptionCode(175) // iPXE encapsulated options
	optIPXENoPXEDHCP = 176                           // sub-option of 175: do not wait for proxyDHCP
	optClientGUID    = dhcpv4.GenericOptionCode(97)  // RFC 4578 client machine identifier
	optVendorSpec    = dhcpv4.GenericOptionCode(43)  // vendor-specific information (PXE sub-options)
)

// BootConfig names the boot files and URLs handed to boot clients. Every
// zero value has the default documented on its field.
type BootConfig struct {
	// BIOSFile is the TFTP boot file for legacy BIOS PXE (arch 0).
	// Default "undionly.kpxe".
	BIOSFile string
	// EFIx64File is the boot file for x86-64 UEFI (arch 7 and 9, and 16 over
	// HTTP). Default "ipxe.efi"; "snponly.efi" is the usual alternative.
	EFIx64File string
	// EFIIA32File is the boot file for 32-bit x86 UEFI (arch 6, 15).
	// Default "ipxe-i386.efi".
	EFIIA32File string
	// EFIArm64File is the boot file for arm64 UEFI (arch 11, 19).
	// Default "ipxe-arm64.efi".
	EFIArm64File string
	// PlainFile is the boot file given to plain DHCP clients (no PXE vendor
	// class). Default "": none.
	PlainFile string
	// IPXEUserClass is the option 77 user class that marks iPXE.
	// Default "iPXE".
	IPXEUserClass string
	// IPXEScriptURL is the template of the per-node iPXE script URL given to
	// iPXE. Default "http://{server}:{port}/ipxe/{mac}". Placeholders:
	// {server} (this server's IP), {port} (HTTPPort), {mac} (aa:bb:..:ff),
	// {name} (reservation name), {file} (boot file for the arch), {arch}
	// (option 93 number), {token} (Token's answer for the client).
	IPXEScriptURL string
	// HTTPBootURL is the template of the URL given to UEFI HTTP boot
	// clients; same placeholders. Default "http://{server}:{port}/ipxe/bin/{file}".
	HTTPBootURL string
	// HTTPPort is the port of this server's HTTP endpoint. Default 80.
	HTTPPort int
	// Token gives the {token} of a client's URLs (the boot server's per-node token, which lets a
	// proxy-mode node without a known address fetch its script). Nil: {token} is empty.
	Token func(mac net.HardwareAddr) string
}

// withDefaults returns c with every zero field set to its default.
func (c BootConfig) withDefaults() BootConfig {
	def := func(s *string, v string) {
		if *s == "" {
			*s = v
		}
	}
	def(&c.BIOSFile, "undionly.kpxe")
	def(&c.EFIx64File, "ipxe.efi")
	def(&c.EFIIA32File, "ipxe-i386.efi")
	def(&c.EFIArm64File, "ipxe-arm64.efi")
	def(&c.IPXEUserClass, "iPXE")
	def(&c.IPXEScriptURL, "http://{server}:{port}/ipxe/{mac}")
	def(&c.HTTPBootURL, "http://{server}:{port}/ipxe/bin/{file}")
	if c.HTTPPort == 0 {
		c.HTTPPort = 80
	}
	return c
}

// BootChoice is what a request gets for booting.
type BootChoice struct {
	Kind ClientKind
	// Arch is the first architecture of option 93; ArchKnown is false when
	// the option was absent or unreadable (Arch is then 0, BIOS).
	Arch      iana.Arch
	ArchKnown bool
	// BootFile goes into the file field and option 67: a TFTP path, or a
	// full URL for KindHTTP and KindIPXE. Empty: no boot file.
	BootFile string
	// VendorClass is echoed in option 60 ("PXEClient", "HTTPClient") or "".
	VendorClass string
	// IPXENoProxyWait asks for option 175 sub-option 176 = 1 so iPXE does
	// not wait ~3 s for proxyDHCP offers.
	IPXENoProxyWait bool
	// GUID is the client's option 97, echoed when present.
	GUID []byte
}

// Classify decides the boot answer for req: vendor class (option 60), client
// architecture (option 93) and user class (option 77). server is this
// server's address and name the reservation's host name; both only fill URL
// templates. It never fails: unknown architectures get no boot file.
func Classify(req *dhcpv4.DHCPv4, cfg BootConfig, server net.IP, name string) BootChoice {
	cfg = cfg.withDefaults()
	var bc BootChoice
	if g := req.Options.Get(optClientGUID); len(g) > 0 {
		bc.GUID = bytes.Clone(g)
	}
	if archs := req.ClientArch(); len(archs) > 0 {
		bc.Arch, bc.ArchKnown = archs[0], true
	}
	file := archFile(cfg, bc.Arch)
	vendor := req.ClassIdentifier()
	vars := urlVars{server: server, port: cfg.HTTPPort, mac: req.ClientHWAddr, name: name, file: file, arch: bc.Arch}
	if cfg.Token != nil {
		vars.token = cfg.Token(req.ClientHWAddr)
	}

	bc.Kind = KindOf(req, cfg.IPXEUserClass)
	switch bc.Kind {
	case KindIPXE:
		bc.BootFile = expand(cfg.IPXEScriptURL, vars)
		bc.IPXENoProxyWait = true
		if strings.HasPrefix(vendor, VendorHTTPClient) {
			bc.VendorClass = VendorHTTPClient
		} else if strings.HasPrefix(vendor, VendorPXEClient) {
			bc.VendorClass = VendorPXEClient
		}
	case KindHTTP:
		bc.VendorClass = VendorHTTPClient
		if file != "" {
			bc.BootFile = expand(cfg.HTTPBootURL, vars)
		}
	case KindPXE:
		bc.VendorClass = VendorPXEClient
		bc.BootFile = file
	default:
		bc.BootFile = cfg.PlainFile
	}
	return bc
}

// KindOf says what kind of boot client sent req: iPXE by its user class (ipxeUserClass, empty:
// "iPXE"), UEFI HTTP boot by its vendor class or architecture, PXE firmware by its vendor class,
// else a plain DHCP client.
func KindOf(req *dhcpv4.DHCPv4, ipxeUserClass string) ClientKind {
	if ipxeUserClass == "" {
		ipxeUserClass = "iPXE"
	}
	vendor := req.ClassIdentifier()
	switch {
	case isIPXE(req, ipxeUserClass):
		return KindIPXE
	case strings.HasPrefix(vendor, VendorHTTPClient):
		return KindHTTP
	}
	if archs := req.ClientArch(); len(archs) > 0 && isHTTPArch(archs[0]) {
		return KindHTTP
	}
	if strings.HasPrefix(vendor, VendorPXEClient) {
		return KindPXE
	}
	return KindPlain
}

// isIPXE reports whether req comes from iPXE: the configured user class in
// option 77 (RFC 3004 list or iPXE's plain string), or iPXE's option 175.
func isIPXE(req *dhcpv4.DHCPv4, class string) bool {
	for _, uc := range req.UserClass() {
		if uc == class {
			return true
		}
	}
	// iPXE sends option 77 as a bare string, which dhcpv4 may mis-read as an
	// RFC 3004 list when the first byte looks like a length.
	if raw := req.Options.Get(dhcpv4.OptionUserClassInformation); string(raw) == class {
		return true
	}
	return class == "iPXE" && req.Options.Has(optIPXEEncap)
}

func isHTTPArch(a iana.Arch) bool {
	switch a {
	case iana.EFI_X86_HTTP, iana.EFI_X86_64_HTTP, iana.EFI_BC_HTTP, iana.EFI_ARM32_HTTP,
		iana.EFI_ARM64_HTTP, iana.INTEL_X86PC_HTTP:
		return true
	}
	return false
}

// archFile maps an RFC 4578 architecture to the boot file for it, "" when
// this server has none.
func archFile(cfg BootConfig, a iana.Arch) string {
	switch a {
	case iana.INTEL_X86PC:
		return cfg.BIOSFile
	case iana.EFI_IA32, iana.EFI_X86_HTTP:
		return cfg.EFIIA32File
	case iana.EFI_X86_64, iana.EFI_BC, iana.EFI_X86_64_HTTP, iana.EFI_BC_HTTP:
		return cfg.EFIx64File
	case iana.EFI_ARM64, iana.EFI_ARM64_HTTP:
		return cfg.EFIArm64File
	}
	return ""
}

type urlVars struct {
	server net.IP
	port   int
	mac    net.HardwareAddr
	name   string
	file   string
	arch   iana.Arch
	token  string
}

func expand(tmpl string, v urlVars) string {
	server := ""
	if v.server != nil {
		server = v.server.String()
	}
	return strings.NewReplacer(
		"{server}", server,
		"{port}", strconv.Itoa(v.port),
		"{mac}", strings.ToLower(v.mac.String()),
		"{name}", v.name,
		"{file}", v.file,
		"{arch}", strconv.Itoa(int(v.arch)),
		"{token}", v.token,
	).Replace(tmpl)
}
