// Package tftpd is a read-only TFTP server over an fs.FS.
//
// It negotiates blksize (capped by Config.MaxBlockSize), tsize, timeout
// (RFC 2349, capped by Config.MaxClientTimeout; windowed transfers only) and
// windowsize (RFC 7440). One socket takes every request and one set of
// checks admits them; two senders move the blocks:
//
//   - lock-step read requests (every PXE ROM and iPXE) go to
//     github.com/pin/tftp/v3's server, run in its single-port mode over
//     pinPort (pin.go), which reads the socket for it: it hands pin/tftp only
//     the requests our checks admitted and their clients' ACKs and ERRORs,
//     and sees every datagram pin/tftp's sender writes;
//   - requests for a window of 2 or more (UEFI firmware asks for 4), which
//     pin/tftp cannot serve, and block sizes below 512, which it would not
//     grant, go to our RFC 7440 sender (window.go) on a port of their own.
//
// Write requests, modes other than octet and netascii, and requests the
// strict parser rejects (duplicate options, more than 16) get a TFTP ERROR;
// other datagrams are dropped unanswered. docs/design.md (TFTP) says why
// lock-step transfers are pin/tftp's, with the figures.
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
