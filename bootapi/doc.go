// Package bootapi is the boot server's HTTP contract: the request and response bodies of its API,
// the client that reads and drives it, and the one rule that merges what several servers say of
// the same nodes.
//
// The server (package bootsrv) writes these bodies; the boot run (bootrun), the command line and
// the test clusters read them through Client. A node's own record (nodestate.NodeStatus,
// nodestate.LiveNode, nodestate.Summary) is the state the server keeps and the body carries it
// unchanged: bootapi wraps it, and nodestate stays free of any store or transport, so that a
// reader of the API links neither bbolt nor etcd.
package bootapi
