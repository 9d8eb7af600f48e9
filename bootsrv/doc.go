// Package bootsrv is one boot server: it loads its configuration, the inventory (MAC -> node) and
// the mapping that says which inventory nodes this server is authoritative for, and runs the DHCP
// (package dhcpd), TFTP (package tftpd) and HTTP endpoints that boot them.
//
// The HTTP endpoint serves per-node iPXE scripts (/ipxe/{mac}), kernels and initrds
// (/boot/{profile}/{file}, with Range requests), the health reports of booted nodes
// (POST /api/v1/nodes/{name}/health), the status API (/api/v1/nodes, /api/v1/summary),
// Prometheus metrics (/metrics) and a liveness probe (/healthz).
//
// Each node owned by the server walks a boot state machine
//
//	pending -> discover -> offered -> bound -> nbp -> kernel -> initrd -> booted -> healthy | failed
//
// fed by the DHCP and TFTP observers and by the HTTP handlers. Next is the pure transition function;
// Tracker applies it, keeps a timestamp per state and persists the states in the state directory so
// that they survive a restart.
package bootsrv
