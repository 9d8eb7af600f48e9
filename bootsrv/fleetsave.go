package bootsrv

import (
	"fmt"

	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
)

// fleetSaves is the fleet's record store as this server's tracker writes it: a save goes out only
// in the membership term of this server's last reconcile. A server cut off from etcd keeps its
// nodes' states in memory and retries the save; once its membership was valid again (a new lease,
// or the old one renewed after a lapse), that retry went out before the reconcile that drops what
// it did to nodes another server took over meanwhile, and overwrote the holder's records with its
// own name. Both servers then answered those nodes until the holder's next save won them back
// (the soak's partitions: 26 DISCOVERs offered by both).
// Refused here, the save is retried by the tracker after the reconcile, without those nodes.
type fleetSaves struct {
	*etcdstore.Store
	f *fleetRuntime
}

// Save implements nodestate.StateStore.
func (s fleetSaves) Save(nodes []nodestate.NodeStatus) error {
	if len(nodes) == 0 {
		return nil
	}
	if cur, last := s.f.m.Term(), s.f.saveTerm.Load(); cur != last {
		return fmt.Errorf("boot states to etcd: membership term %d has no ownership computed yet (last %d): saved after the next reconcile", cur, last)
	}
	return s.Store.Save(nodes)
}
