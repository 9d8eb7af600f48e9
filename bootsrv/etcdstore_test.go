package bootsrv

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fleet"
)

// TestFleetNeedsMembership: neither the etcd store nor a fleet server is built without a
// membership, which would leave their writes unguarded.
func TestFleetNeedsMembership(t *testing.T) {
	c := &fleet.Client{}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"store without a membership", func() error { _, err := NewEtcdStore(c, nil); return err }, "membership"},
		{"store without a client", func() error { _, err := NewEtcdStore(nil, nil); return err }, "fleet client"},
		{"server without a membership", func() error {
			_, err := newFleetRuntime(nil, FleetOptions{Client: c})
			return err
		}, "membership"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
