// Package tftpd is a read-only TFTP server over an fs.FS, built on
// github.com/pin/tftp/v3.
//
// It negotiates blksize (capped by Config.MaxBlockSize, and optionally by
// the MTU of the arriving interface) and answers tsize. It does not negotiate windowsize
// (RFC 7440): pin/tftp v3.2.0 drops unknown options from its OACK, so a
// client asking for windowsize 4 falls back to lock-step, as the RFC allows.
// Write requests are refused. Every requested name goes through Resolve,
// and every file is opened through the configured fs.FS; serve a directory
// through (*os.Root).FS so that symbolic links cannot lead out of it.
//
// UEFI firmware opens a transfer only to learn tsize and aborts it with an
// ERROR packet right after the OACK, then asks again for the whole file.
// Such transfers are reported with OutcomeProbe, not as failures.
//
// Each transfer is reported to an Observer (for boot state) and to
// Prometheus metrics registered on a caller-supplied registerer.
package tftpd
