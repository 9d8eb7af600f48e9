package images

import (
	"bytes"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/template"
)

// DebianIPXEDir is where Debian's ipxe package installs its binaries.
const DebianIPXEDir = "/usr/lib/ipxe"

// IPXEBinaryNames are the network boot programs LocateIPXE looks for:
// BIOS PXE (undionly.kpxe), UEFI with iPXE's own drivers (ipxe.efi), UEFI
// through the firmware's SNP driver (snponly.efi), and the arm64 builds
// some distributions ship.
var IPXEBinaryNames = []string{"undionly.kpxe", "ipxe.efi", "snponly.efi", "ipxe-arm64.efi", "snponly-arm64.efi"}

// IPXE is a set of iPXE binaries found on disk.
type IPXE struct {
	Dir   string            // the directory searched
	Files map[string]string // binary name -> resolved path of a regular file
}

// LocateIPXE finds the binaries of IPXEBinaryNames in dir (DebianIPXEDir
// when dir is empty), following symbolic links (Debian links ipxe.efi to
// /boot). It fails if none is found.
func LocateIPXE(dir string) (IPXE, error) {
	if dir == "" {
		dir = DebianIPXEDir
	}
	x := IPXE{Dir: dir, Files: map[string]string{}}
	for _, n := range IPXEBinaryNames {
		p, err := filepath.EvalSymlinks(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			x.Files[n] = p
		}
	}
	if len(x.Files) == 0 {
		hint := ""
		if dir == DebianIPXEDir {
			hint = " (install the Debian package ipxe, or configure a directory)"
		}
		return IPXE{}, fmt.Errorf("images: no iPXE binary (%s) in %s%s", strings.Join(IPXEBinaryNames, ", "), dir, hint)
	}
	return x, nil
}

// ScriptParams are the per-node values of an iPXE script.
type ScriptParams struct {
	Server    string // host name or IP of the boot server's HTTP endpoint
	Port      int    // its port
	Node      string // node name, passed as bootfabric.node=
	HealthURL string // where the booted node POSTs its report, passed as bootfabric.health=
	// Token is the node's token, added as ?token= to the kernel and initrd URLs (the boot server
	// counts a download as the node's only with it). Empty: none. iPXE names an image by the
	// URL's path, so initrd= still matches.
	Token string
	// Overlay is the URL of the node's overlay initrd (images.Overlay), loaded after the profile's
	// initrd so that its files win; empty: none.
	Overlay string
}

// scriptTemplate boots the profile's kernel and initrd over HTTP. initrd=
// on the command line lets an EFI-stub kernel find the initrd iPXE loaded.
// On failure it says so and reboots, so that the boot server sees the node
// try again rather than hang. A profile with a root image tells the agent
// where to fetch it: the server, profile, file and the token the tracker
// asks for (bootfabric.server=, .profile=, .root=, .token=).
var scriptTemplate = template.Must(template.New("ipxe").Parse(`#!ipxe
# bootfabric: node {{.Node}}, profile {{.Profile.Name}}
echo bootfabric: booting {{.Node}} with profile {{.Profile.Name}}
kernel {{.Base}}/{{.Profile.Kernel}}{{.Query}}{{with .Profile.Initrd}} initrd={{.}}{{end}}{{if .Overlay}} initrd=overlay.cpio.gz{{end}}{{with .Profile.Cmdline}} {{.}}{{end}} bootfabric.node={{.Node}}{{with .HealthURL}} bootfabric.health={{.}}{{end}}{{with .Profile.Root}} bootfabric.server={{$.Server}} bootfabric.profile={{$.Profile.Name}} bootfabric.root={{.}}{{with $.Token}} bootfabric.token={{.}}{{end}}{{end}} || goto failed
{{- with .Profile.Initrd}}
initrd {{$.Base}}/{{.}}{{$.Query}} || goto failed
{{- end}}
{{- with .Overlay}}
initrd {{.}} || goto failed
{{- end}}
boot || goto failed
:failed
echo bootfabric: boot of {{.Node}} failed, rebooting in 10 s
sleep 10
reboot
`))

// RenderScript renders the iPXE script that boots p on one node: kernel and
// initrd from http://{Server}:{Port}/boot/{profile}/{file}, the profile's
// command line, then bootfabric.node= and bootfabric.health=.
func RenderScript(p Profile, sp ScriptParams) ([]byte, error) {
	if err := checkScriptParams(p, sp); err != nil {
		return nil, err
	}
	query := ""
	if sp.Token != "" {
		query = "?token=" + sp.Token
	}
	host := net.JoinHostPort(sp.Server, strconv.Itoa(sp.Port))
	var buf bytes.Buffer
	err := scriptTemplate.Execute(&buf, struct {
		Profile   Profile
		Node      string
		HealthURL string
		Base      string
		Query     string
		Overlay   string
		Server    string
		Token     string
	}{p, sp.Node, sp.HealthURL, "http://" + host + "/boot/" + p.Name, query, sp.Overlay, "http://" + host, sp.Token})
	if err != nil {
		return nil, fmt.Errorf("images: rendering iPXE script for node %q: %w", sp.Node, err)
	}
	return buf.Bytes(), nil
}

// checkScriptParams names the first of p and sp's values that cannot go into an iPXE script.
func checkScriptParams(p Profile, sp ScriptParams) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("images: rendering iPXE script: %w", err)
	}
	if err := checkName("node", sp.Node, true); err != nil {
		return fmt.Errorf("images: rendering iPXE script for profile %q: %w", p.Name, err)
	}
	if sp.Server == "" || strings.ContainsAny(sp.Server, " \t\r\n/") {
		return fmt.Errorf("images: rendering iPXE script for node %q: bad server %q", sp.Node, sp.Server)
	}
	if sp.Port <= 0 || sp.Port > 65535 {
		return fmt.Errorf("images: rendering iPXE script for node %q: bad port %d", sp.Node, sp.Port)
	}
	if sp.Overlay != "" && !isHTTPURL(sp.Overlay) {
		return fmt.Errorf("images: rendering iPXE script for node %q: bad overlay URL %q", sp.Node, sp.Overlay)
	}
	if sp.HealthURL != "" && !isHTTPURL(sp.HealthURL) {
		return fmt.Errorf("images: rendering iPXE script for node %q: bad health URL %q", sp.Node, sp.HealthURL)
	}
	if sp.Token != "" && strings.ContainsFunc(sp.Token, notAlphanumeric) {
		return fmt.Errorf("images: rendering iPXE script for node %q: bad token", sp.Node)
	}
	return nil
}

// isHTTPURL says whether s is an absolute http or https URL with a host and no white space (it
// goes on the kernel command line, where white space would split it).
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && !strings.ContainsAny(s, " \t\r\n")
}

// notAlphanumeric says whether r is anything but an ASCII letter or digit.
func notAlphanumeric(r rune) bool {
	return !('0' <= r && r <= '9' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')
}
