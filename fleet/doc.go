// Package fleet keeps what a fleet of boot servers shares in etcd.
//
// A fleet is a set of boot servers that answer one machine together: they read one configuration
// revision, see one set of live members, and share address leases, node records (boot states) and
// events (takeovers). Which server owns which node is not stored: every server computes it from the
// configuration and the live member set (mapping.Owners), so the store only has to agree on those.
// The package stores opaque []byte records; what they mean is the caller's business (bootsrv).
//
// # Key layout
//
// Everything of fleet F lives under one prefix, /bootfabric/F/ (F matches [a-z0-9-]{1,63}), so
// that one etcd serves several fleets, and `etcdctl get --prefix /bootfabric/F/` shows all of one:
//
//	/bootfabric/F/config                 the configuration: "bfc2" | sha256(doc) | serial | key id | ed25519 signature | gzip(doc)
//	/bootfabric/F/members/NAME           a live server's info, attached to its etcd lease
//	/bootfabric/F/records/KIND/NAME      node records of one kind (boot states, ...)
//	/bootfabric/F/addr/IP                an address lease: {"mac":..,"expires":..}
//	/bootfabric/F/mac/MAC                the address a MAC holds: IP (addr/IP is the truth)
//	/bootfabric/F/events/KIND/SEQ        events of one kind, SEQ zero-padded, from 1
//	/bootfabric/F/eventseq/KIND          the sequence counter of events/KIND (its version)
//
// Kinds and names are single key elements: non-empty, no '/'.
//
// # Safety rules
//
//   - Membership is an etcd lease: a member key exists exactly while its server renews the lease,
//     so when a server dies its key is gone within its TTL and the others take its nodes over.
//     A name is held by one live member at a time (Join is a transaction on the key's create
//     revision).
//   - Fencing: a server must stop acting for its nodes before the others can believe it dead.
//     Membership.Valid is true only while the time since the last renewal's request was sent
//     (or the grant's) is below TTL - margin, margin = max(TTL/3, 500 ms). etcd extends a lease
//     from the moment it handles the renewal, which is after the request was sent, so the lease
//     cannot have expired anywhere while Valid is true; the margin covers the time the server takes
//     to stop (a reply in flight) and clock-rate differences. The renewals are sent every
//     (TTL - margin)/4, so one lost renewal does not drop Valid.
//   - During an etcd leader election no lease can be renewed (and none expires: a new leader
//     restarts every lease's TTL). An election that outlasts TTL - margin - (TTL - margin)/4 makes
//     servers not Valid until it ends: with etcd's defaults (1 s election timeout) and a 3 s TTL,
//     the tests see 0.5 to 2 s of it when the leader is killed. A longer TTL rides through
//     elections at the price of slower takeovers.
//   - A server that lost its lease (etcd expired it while the server could not reach etcd) is told
//     by Membership.Lost and re-joins by itself with a new lease when etcd answers again.
//   - Writes a fenced-out server must not make (boot states) go through PutRecordsIfMember, whose
//     transaction also compares that the member key still holds that server's lease.
//   - An address is given to a MAC only by a transaction that compares the address key's create or
//     mod revision with what was read, so no address is ever held by two MACs, whatever the
//     concurrency across the fleet. With etcd unreachable no address is allocated at all.
//   - Every request is bounded by Options.RequestTimeout; watches resume from the last revision
//     they delivered after an error, and start from a fresh read after a compaction.
//
// # etcd as a trusted store
//
// Whoever can write a fleet's keys can rewrite the fleet, so etcd should run with TLS, client
// certificates (--client-cert-auth) and authentication on. Options.TLS (LoadTLS builds it from
// files) and Options.Username/Password (ReadSecretFile) connect that way; a client certificate's
// common name is its etcd user. SetupAuth gives each server a user with least privilege: it reads
// the whole fleet but writes only its own member key and the shared records/, addr/, mac/, events/
// and eventseq/ keys, never the configuration nor another server's member key; the operator's user
// may write the whole fleet. The order is SetupAuth (as root, or before authentication is on),
// EnableAuth, then the servers and the operator connect as their users (AuthRoles lists the roles).
//
// What etcd 3.4 checks, and what it does not: a lease is revoked (Membership.Leave) only by a
// user that may write every key attached to it, and a key is put with a lease only by a user that
// may write the lease's keys, so a server can neither revoke nor borrow another's lease. But
// granting, renewing and reading leases is not checked at all: any client with a certificate the
// CA signed, whatever its user, can keep another server's lease alive by its id, delaying that
// server's takeover after it died. Client certificates are therefore to be issued only to the
// fleet's servers and operators.
//
// The package holds no package-level mutable state; the clock (Options.Now), the logger and the
// Prometheus registerer are passed in.
package fleet
