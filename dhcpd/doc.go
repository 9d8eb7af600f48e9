// Package dhcpd is a DHCPv4 server for network boot (PXE, UEFI HTTP boot and
// iPXE) built on github.com/insomniacslk/dhcp.
//
// It answers only for the clients an Authority (Reservations and, optionally, a
// dynamic Pool) says this server owns, so that several boot servers on one
// segment never answer the same node. Decisions are pure functions
// (Classify, BuildReply, Handler.Handle; BuildReply runs a chain of option
// modifiers per boot class, modifiers.go) kept apart from the sockets (Server),
// which add a bounded worker pool with per-(MAC, xid) de-duplication,
// interface-aware replies (IP_PKTINFO) and relay support (giaddr). Its queue
// (queue.go) serves REQUESTs before DISCOVERs and drops requests whose
// client has moved on or stopped asking.
//
// Modes: ModeReservation answers DISCOVER/REQUEST with addresses;
// ModeProxy is proxyDHCP (ports 67 and 4011, PXE options only, no
// addresses); ModeOff answers nothing.
package dhcpd
