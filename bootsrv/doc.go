// Package bootsrv is one boot server: it loads its configuration, the inventory (MAC -> node) and
// the mapping that says which inventory nodes this server is authoritative for, and runs the DHCP
// (package dhcpd), TFTP (package tftpd) and HTTP endpoints that boot them.
//
// The HTTP endpoint serves per-node iPXE scripts (/ipxe/{mac}), kernels and initrds
// (/boot/{profile}/{file}, with Range requests), the health reports of booted nodes
// (POST /api/v1/nodes/{name}/health), the status API (/api/v1/nodes, /api/v1/summary),
// Prometheus metrics (/metrics), a liveness probe (/healthz), a read-only page that shows the
// boot live (/ui/, web.go) and the operator API (POST /api/v1/nodes/{name}/reboot).
//
// The boot network is shared with hosts the server cannot vet (auth.go): a node proves who it is
// with a per-node token (HMAC of its name under the server's secret) that only its own iPXE script
// carries, served only to the node's address; health reports and the downloads that move a node
// need the token and the node's address, and only a full delivery counts. The operator API
// (reboot, power-off, and a bootctl boot run's prediction for the boot page: runcurve.go) needs a
// bearer token from a file
// and, by default, the server's own host. The HTTP server has
// timeouts, merges and caps Range requests and caps connections per client (files.go,
// connlimit.go).
//
// The boot state of each node the server owns lives in package nodestate: the server feeds its
// tracker from the DHCP and TFTP observers (observe.go) and the HTTP handlers, and keeps the
// states in the state directory (nodestate/boltstore) or, in a fleet, in etcd
// (nodestate/etcdstore). The API's bodies and the client that reads it are package bootapi's.
package bootsrv
