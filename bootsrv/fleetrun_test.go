package bootsrv

import (
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/fleet"
)

// TestFleetServerNeedsMembership: no fleet server is built without a membership, which would
// leave its writes unguarded.
func TestFleetServerNeedsMembership(t *testing.T) {
	_, err := newFleetRuntime(nil, FleetOptions{Client: &fleet.Client{}})
	if err == nil || !strings.Contains(err.Error(), "membership") {
		t.Errorf("got %v, want an error naming the membership", err)
	}
}
