package testcluster

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"

	"go.uber.org/zap"
)

// CheckHost says what this host lacks for a netns cluster: the commands a cluster runs (with the
// Debian package of each, in the order of their names) and root, which namespaces need.
func CheckHost() error {
	tools := map[string]string{"ip": "iproute2", "tc": "iproute2", "curl": "curl", "udhcpc": "udhcpc", "busybox": "busybox"}
	var missing, pkgs []string
	for _, tool := range slices.Sorted(maps.Keys(tools)) {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
			pkgs = append(pkgs, tools[tool])
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s; install with: apt-get install %s", strings.Join(missing, ", "), strings.Join(slices.Compact(pkgs), " "))
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("network namespaces need root")
	}
	return nil
}

// UpAndServe brings the cluster of spec up and starts its boot servers, in QEMU VMs when qemu is
// set; a cluster whose servers do not start is taken down again.
func UpAndServe(ctx context.Context, spec Spec, opt ServerOptions, qemu bool, log *zap.Logger) (*Cluster, error) {
	cl, err := Up(ctx, spec, log)
	if err != nil {
		return nil, err
	}
	start := cl.StartServers
	if qemu {
		start = func(ctx context.Context, opt ServerOptions) error { return cl.StartQEMUServers(ctx, opt, VMImage{}) }
	}
	if err := start(ctx, opt); err != nil {
		_ = cl.Down(context.Background())
		return nil, err
	}
	return cl, nil
}
