package bootsrv

import (
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/images"
)

// CheckResult is what Check found in a configuration that passed: enough for one line that says
// which server this is and what it will serve.
type CheckResult struct {
	File      string   `json:"file"`
	Server    string   `json:"server"`
	ServerID  int      `json:"server_id"`
	Servers   int      `json:"servers"`
	Topology  string   `json:"topology"` // the preset or file, or "flat"
	Mapping   string   `json:"mapping"`
	Inventory int      `json:"inventory"` // nodes in the inventory
	Owned     int      `json:"owned"`     // of them, the nodes this server answers
	Profiles  []string `json:"profiles"`  // the default and those the inventory names, sorted
	DHCP      string   `json:"dhcp"`
}

// String is the one-line summary `bootctl serve --check` prints.
func (r *CheckResult) String() string {
	return fmt.Sprintf("%s: ok: server %s (%d of %d), %s machine, %d inventory nodes, %d owned (%s), profiles %v, dhcp %s",
		r.File, r.Server, r.ServerID, r.Servers, r.Topology, r.Inventory, r.Owned, r.Mapping, r.Profiles, r.DHCP)
}

// Check validates a configuration and everything it names as New would (topology, inventory,
// mapping, addresses, the DHCP interfaces, the image store, the iPXE binaries, the default profile and every profile
// the inventory names, the store's blobs against their manifest), without opening a socket, the
// state store or the secret files, so that it can run beside a live server. Errors are New's.
func Check(cfg *bootconfig.Config) (*CheckResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := checkInterfaces(cfg); err != nil {
		return nil, err
	}
	s := newServer(cfg, Options{})
	algo, err := s.loadMachine()
	if err != nil {
		return nil, err
	}
	st, err := images.Open(cfg.Images)
	if err != nil {
		return nil, fmt.Errorf("%s: images: %w", cfg.File(), err)
	}
	if _, err := images.LocateIPXE(cfg.IPXEDir); err != nil {
		return nil, fmt.Errorf("%s: ipxe_dir: %w", cfg.File(), err)
	}
	inv := s.auth.Inventory()
	if err := bootconfig.CheckProfiles(cfg, inv, st, cfg.Line); err != nil {
		return nil, err
	}
	r := &CheckResult{File: cfg.File(), Server: cfg.Servers[cfg.ServerID].Name, ServerID: cfg.ServerID, Servers: len(cfg.Servers),
		Topology: cfg.Topology, Mapping: algo, Inventory: len(inv.Nodes), Owned: len(s.auth.Owned()), DHCP: string(cfg.DHCP.Mode),
		Profiles: []string{cfg.Profile}}
	if r.Topology == "" {
		r.Topology = "flat"
	}
	for _, n := range inv.Nodes {
		if n.Profile != "" && !slices.Contains(r.Profiles, n.Profile) {
			r.Profiles = append(r.Profiles, n.Profile)
		}
	}
	slices.Sort(r.Profiles)
	return r, nil
}

// checkInterfaces checks that every interface dhcp.interfaces names exists on this host, so that
// a typo is one line naming the field at --check (and before New writes a state file), not a bind
// error after the server has started. The error names the host's interfaces.
func checkInterfaces(cfg *bootconfig.Config) error {
	if cfg.DHCP.Mode == dhcpd.ModeOff {
		return nil
	}
	for i, name := range cfg.DHCP.Interfaces {
		if _, err := net.InterfaceByName(name); err == nil {
			continue
		}
		var have []string
		if ifs, err := net.Interfaces(); err == nil {
			for _, ifc := range ifs {
				have = append(have, ifc.Name)
			}
		}
		return &bootconfig.Error{File: cfg.File(), Line: cfg.Line("dhcp.interfaces"), Field: fmt.Sprintf("dhcp.interfaces[%d]", i),
			Msg: fmt.Sprintf("this host has no interface %q (it has: %s)", name, strings.Join(have, ", "))}
	}
	return nil
}
