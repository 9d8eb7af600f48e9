package tftpd

import (
	"crypto/sha256"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// BenchmarkFetch8MB fetches an 8 MB file over loopback at blksize 1468:
// with the pin/tftp client lock-step, and with the tests' raw RFC 7440
// client (rawFetchWindowed) at windowsize 4 (what UEFI firmware asks for)
// and 16. bench/tftp/run.sh measures real clients and the concurrent case
// beside tftpd-hpa.
func BenchmarkFetch8MB(b *testing.B) {
	data := testfix.RandomBytes(8_000_000, 99)
	sum := sha256.Sum256(data)
	b.Run("lockstep", func(b *testing.B) {
		ts := startServer(b, Config{Root: fstest.MapFS{"f": {Data: data}}})
		b.SetBytes(int64(len(data)))
		b.ResetTimer()
		for range b.N {
			got, _, err := fetch(ts.addr, "f", 1468, true)
			if err != nil {
				b.Fatal(err)
			}
			if sha256.Sum256(got) != sum {
				b.Fatal("sha256 differs")
			}
		}
	})
	for _, window := range []int{4, 16} {
		b.Run(fmt.Sprintf("windowsize%d", window), func(b *testing.B) {
			ts := startServer(b, Config{Root: fstest.MapFS{"f": {Data: data}}})
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				rc, first := rawRRQ(b, ts.addr, "f", "blksize", "1468", "windowsize", fmt.Sprint(window))
				parseOACK(b, first)
				if got := rawFetchWindowed(b, rc, 1468, window, nil); sha256.Sum256(got) != sum {
					b.Fatal("sha256 differs")
				}
			}
		})
	}
}
