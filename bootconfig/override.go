package bootconfig

import (
	"fmt"

	"github.com/bootfabric/bootfabric/dhcpd"
)

// Override sets the setting the file key names (http.listen, dhcp.mode, state_dir, ...) to v, as
// a command-line flag replaces the file's value; a key it has no such setting for is an error.
func (c *Config) Override(key, v string) error {
	if key == "dhcp.mode" {
		c.DHCP.Mode = dhcpd.Mode(v)
		return nil
	}
	fields := map[string]*string{"http.listen": &c.HTTP.Listen, "http.url": &c.HTTP.URL, "tftp.listen": &c.TFTP.Listen,
		"tftp.root": &c.TFTP.Root, "dhcp.listen": &c.DHCP.Listen, "topology": &c.Topology, "mapping": &c.Mapping,
		"inventory": &c.Inventory, "images": &c.Images, "ipxe_dir": &c.IPXEDir, "profile": &c.Profile, "state_dir": &c.StateDir,
		"http.node_secret_file": &c.HTTP.NodeSecretFile, "http.operator_token_file": &c.HTTP.OperatorTokenFile}
	p, ok := fields[key]
	if !ok {
		return fmt.Errorf("no setting %q to override", key)
	}
	*p = v
	return nil
}
