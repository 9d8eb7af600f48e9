package tftpd

import (
	"net/netip"
	"time"
)

// Outcome says how a transfer ended.
type Outcome string

// Outcomes of a transfer. They are also the values of the "outcome" label
// of the transfer metrics.
const (
	// OutcomeOK: the whole file was sent and acknowledged.
	OutcomeOK Outcome = "ok"
	// OutcomeProbe: the client aborted with an ERROR packet after the
	// OACK, before any data: the UEFI tsize probe. Not a failure.
	OutcomeProbe Outcome = "probe"
	// OutcomeAborted: the client sent an ERROR packet during the data phase.
	OutcomeAborted Outcome = "aborted"
	// OutcomeNotFound: the resolved path does not exist, or is not a
	// regular file.
	OutcomeNotFound Outcome = "not_found"
	// OutcomeRefused: the request was refused before any file was opened:
	// a bad path (see Resolve), a write request, or too many transfers.
	OutcomeRefused Outcome = "refused"
	// OutcomeTimeout: the client stopped acknowledging.
	OutcomeTimeout Outcome = "timeout"
	// OutcomeError: anything else (read error, shutdown, network error).
	OutcomeError Outcome = "error"
)

// Failed reports whether the outcome counts against a boot. A probe does not.
func (o Outcome) Failed() bool {
	return o != OutcomeOK && o != OutcomeProbe
}

// TransferInfo describes a transfer when it starts.
type TransferInfo struct {
	Remote   netip.AddrPort // client address and port (its TID)
	Filename string         // as requested
	Path     string         // resolved path in the served FS; empty when refused
}

// TransferResult describes a finished transfer.
type TransferResult struct {
	TransferInfo
	Outcome         Outcome
	Size            int64         // file size; -1 when no file was opened
	Bytes           int64         // bytes read from the file and sent
	BlockSize       int           // negotiated block size; 512 without the option
	WindowSize      int           // negotiated windowsize (RFC 7440); 1 for lock-step
	Duration        time.Duration // from request to end
	Retransmissions int           // data or OACK datagrams sent again
	Err             error         // nil for OutcomeOK
}

// Observer is told about every read request. Calls come from the transfer's
// goroutine, concurrently for different transfers, and must not block.
// Every OnTransferDone follows one OnTransferStart with the same Remote.
type Observer interface {
	OnTransferStart(TransferInfo)
	OnTransferDone(TransferResult)
}

// Observers fans every call out to each observer in order.
type Observers []Observer

// OnTransferStart implements Observer.
func (os Observers) OnTransferStart(i TransferInfo) {
	for _, o := range os {
		o.OnTransferStart(i)
	}
}

// OnTransferDone implements Observer.
func (os Observers) OnTransferDone(r TransferResult) {
	for _, o := range os {
		o.OnTransferDone(r)
	}
}

type nopObserver struct{}

func (nopObserver) OnTransferStart(TransferInfo)  {}
func (nopObserver) OnTransferDone(TransferResult) {}
