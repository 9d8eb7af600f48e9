// Package testcluster builds throw-away test clusters on one Linux host and boots them with real
// clients, to measure what fabricsim predicts. It is a product package: `bootctl cluster` is
// built on it, and the integration tests beside it (its _test.go files) use it.
//
// The netns kind turns a machine graph into network namespaces: every compute node and boot server
// is a namespace (a container node), every switch a Linux bridge in a namespace of its own, every
// link a veth pair whose two directions are shaped with tc tbf to the link's capacity times a
// scale. Nothing is connected to the host's own namespace, so no traffic leaves the cluster; the
// one exception is a fleet's management network (Cluster.AddMgmt): a bridge in the host's namespace
// with a veth into each boot server's namespace, on a private /24, where the servers reach etcd.
// The servers have no route beyond that /24.
//
// Everything a cluster creates is recorded in a state file before it is created, so Down removes
// exactly that, whether the cluster came up whole, failed half-way, or was left by a killed run;
// it never touches an interface or namespace it did not record.
package testcluster
