// Package tftpd is a read-only TFTP server over an fs.FS.
//
// It negotiates blksize (capped by Config.MaxBlockSize), tsize, timeout
// (RFC 2349, capped by Config.MaxClientTimeout) and windowsize (RFC 7440).
// Serve reads every datagram on the TFTP port in one loop (requests.go)
// and starts each read request on a port of its own, in one of two
// senders: RFC 7440 windows (window.go) for clients that ask for a window
// of 2 or more (UEFI firmware asks for 4), lock-step (lockstep.go) for the
// rest (every PXE ROM and iPXE): a lock-step transfer blocks its thread in
// recv(2) while the server runs no more transfers than GOMAXPROCS, and
// waits through Go's poller beyond; serveTransfer chooses the sender.
// Write requests, modes other than octet and netascii, and requests the
// strict parser rejects (duplicate options, more than 16) get a TFTP ERROR;
// other datagrams are dropped unanswered.
//
// github.com/pin/tftp/v3 serves no request: the server uses only its
// netascii converter; tests use its client, and bench/tftp runs its server
// beside this one (docs/design.md, TFTP, says why ours serves).
//
// A host on the boot network cannot hold the server: a transfer holds its
// slot at most Config.MaxTransferTime, one client address at most
// Config.MaxTransfersPerClient slots, a client that goes away (ERROR
// packet, ICMP port unreachable) frees its slot at once, and Serve returns
// within moments of its context ending, whatever the transfers wait for.
//
// Every requested name goes through Resolve, and every file is opened
// through the configured fs.FS; serve a directory through (*os.Root).FS so
// that symbolic links cannot lead out of it.
//
// UEFI firmware opens a transfer only to learn tsize and aborts it with an
// ERROR packet right after the OACK, then asks again for the whole file.
// Such transfers are reported with OutcomeProbe, not as failures.
//
// Each transfer is reported to an Observer (for boot state) and to
// Prometheus metrics registered on a caller-supplied registerer.
package tftpd
