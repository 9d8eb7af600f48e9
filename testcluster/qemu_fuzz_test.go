package testcluster

import (
	"strings"
	"testing"
)

// FuzzModuleOrder feeds arbitrary modules.dep text and module names to the resolver: it must not
// panic or loop, and what it returns lists each module once.
func FuzzModuleOrder(f *testing.F) {
	f.Add("kernel/a.ko: kernel/b.ko\nkernel/b.ko:\n", "a")
	f.Add("kernel/a.ko: kernel/b.ko\nkernel/b.ko: kernel/a.ko\n", "a b")
	f.Add("no colon here\n", "x")
	f.Add("k/virtio_net.ko: k/net_failover.ko k/failover.ko\nk/net_failover.ko: k/failover.ko\nk/failover.ko:\n", "virtio-net")
	f.Fuzz(func(t *testing.T, dep, names string) {
		out, err := moduleOrder(strings.NewReader(dep), nil, strings.Fields(names))
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, p := range out {
			if seen[p] {
				t.Fatalf("%q listed twice in %q", p, out)
			}
			seen[p] = true
		}
	})
}
