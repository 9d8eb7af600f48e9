package delivery

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/units"
)

// FetchWithin is Fetch with its download bounded by timeout: the seed after it, once o.Out is
// written, does not count.
func FetchWithin(ctx context.Context, o Options, timeout time.Duration) (Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// A watchdog that stops when the file is there.
	done := make(chan struct{})
	go func() {
		select {
		case <-time.After(timeout):
			if _, err := os.Stat(o.Out); err != nil {
				cancel()
			}
		case <-done:
		}
	}()
	res, err := Fetch(ctx, o)
	close(done)
	return res, err
}

// WriteText writes what a fetch of out came to: WriteVerified's lines, then WriteSeed's.
func (res *Result) WriteText(w io.Writer, out string) error {
	if err := res.WriteVerified(w, out); err != nil {
		return err
	}
	return res.WriteSeed(w)
}

// WriteVerified writes what the download of out came to: its size and checksum, where its bytes
// came from, the bad pieces and the peers banned for them.
func (res *Result) WriteVerified(w io.Writer, out string) error {
	_, err := fmt.Fprintf(w, "%s: %s verified (sha256 %s) in %.1f s: %s from peers, %s from the server\n",
		out, units.FormatBytes(float64(res.Size)), res.SHA256, res.Seconds, units.FormatBytes(float64(res.FromPeers)), units.FormatBytes(float64(res.FromServer)))
	if err == nil && (res.BadPieces > 0 || len(res.BannedPeers) > 0) {
		_, err = fmt.Fprintf(w, "%d bad pieces dropped; peers banned for them: %s\n", res.BadPieces, strings.Join(res.BannedPeers, ", "))
	}
	return err
}

// WriteSeed writes the seed's line: how long, and what went to peers in all.
func (res *Result) WriteSeed(w io.Writer) error {
	_, err := fmt.Fprintf(w, "seeded %.0f s, sent %s to peers\n", res.SeededFor, units.FormatBytes(float64(res.Uploaded)))
	return err
}
