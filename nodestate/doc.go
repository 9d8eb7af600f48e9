// Package nodestate is the boot state of cluster nodes: the state machine, the tracker that applies
// events to it, and the stores that keep it.
//
// Each node walks
//
//	pending -> discover -> offered -> bound -> nbp -> kernel -> initrd -> booted -> healthy | failed
//
// Next is the pure transition function. A Tracker holds the nodes one boot server owns, applies
// the server's DHCP, TFTP and HTTP events through Next, keeps a time per state, a bounded history
// and the last health report, and saves changed nodes in batches (a DHCP handshake waits longer
// than a download). A Tracker is safe for concurrent use.
//
// Two stores keep the states: Store, a bbolt file in the server's state directory, and EtcdStore,
// a fleet's etcd records written through the server's membership (fleet.PutRecordsIfMember), so
// that a server fenced out of the fleet writes nothing. A damaged state file is detected before
// bbolt maps it (pagecheck.go) and is a DamagedError; RecoverStore keeps it aside and salvages its
// records. NodeStatus is also the wire form of the status API that bootctl status, the boot run and
// the tests read.
package nodestate
