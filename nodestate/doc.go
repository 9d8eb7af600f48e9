// Package nodestate is the boot state of cluster nodes: the state machine, the tracker that applies
// events to it, and the records the stores keep and the status API shows.
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
// NodeStatus, LiveNode and Summary are the records the tracker keeps; the stores save NodeStatus
// as AppendStatusJSON writes it, and the status API (package bootapi) carries all three unchanged.
// The package opens no file and no connection: it saves through StateStore. The two stores, a
// bbolt file (nodestate/boltstore) and a fleet's etcd records (nodestate/etcdstore), are packages
// of their own, so that a reader of states links neither bbolt nor etcd.
package nodestate
