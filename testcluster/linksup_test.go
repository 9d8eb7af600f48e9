package testcluster

import "testing"

// TestFirstNotUp reads `ip -o link show` as iproute2 prints it.
func TestFirstNotUp(t *testing.T) {
	const up = "1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode DEFAULT group default qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00\n" +
		"2: br0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP mode DEFAULT group default qlen 1000\\    link/ether 6a:1e:5d:4c:c2:0e brd ff:ff:ff:ff:ff:ff\n" +
		"3: up0@if12: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc tbf master br0 state UP mode DEFAULT group default qlen 1000\\    link/ether 6a:1e:5d:4c:c2:0e brd ff:ff:ff:ff:ff:ff link-netns bf-x-core\n"
	for _, tc := range []struct {
		name, out, dev, state string
	}{
		{"all up", up, "", ""},
		{"a port whose carrier the kernel has not acted on", up + "4: p2@if3: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc tbf master br0 state LOWERLAYERDOWN mode DEFAULT\n", "p2", "LOWERLAYERDOWN"},
		{"a bridge with no port up", "2: br0: <NO-CARRIER,BROADCAST,MULTICAST,UP> mtu 1500 qdisc noqueue state DOWN mode DEFAULT\n" + up, "br0", "DOWN"},
		{"no state field", "5: eth0: <BROADCAST> mtu 1500\n", "eth0", "unknown"},
		{"nothing", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if dev, state := firstNotUp(tc.out); dev != tc.dev || state != tc.state {
				t.Errorf("firstNotUp: %q %q, want %q %q", dev, state, tc.dev, tc.state)
			}
		})
	}
}
