// Package tftpd is a read-only TFTP server over an fs.FS, built on
// github.com/pin/tftp/v3.
//
// It negotiates blksize (capped by Config.MaxBlockSize) and answers tsize.
// Lock-step transfers, which every PXE ROM and iPXE use, run in pin/tftp.
// pin/tftp v3.2.0 cannot negotiate windowsize (RFC 7440): it deletes the
// option from its OACK. So read requests that ask for a window of 2 or more
// (UEFI firmware asks for 4) are taken out of pin/tftp's request stream and
// served by this package's own windowed sender (window.go), which also
// honours the timeout option (RFC 2349). Write requests are refused.
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
