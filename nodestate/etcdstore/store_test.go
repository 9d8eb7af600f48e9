package etcdstore

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fleet"
)

// TestStoreNeedsMembership: no etcd store is built without a membership, which would leave
// its writes unguarded.
func TestStoreNeedsMembership(t *testing.T) {
	c := &fleet.Client{}
	for _, tc := range []struct {
		name string
		err  func() error
		want string
	}{
		{"store without a membership", func() error { _, err := New(c, nil); return err }, "membership"},
		{"store without a client", func() error { _, err := New(nil, nil); return err }, "fleet client"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.err(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error naming %q", err, tc.want)
			}
		})
	}
}
