package tftpd

import (
	"crypto/sha256"
	"testing"
	"testing/fstest"
)

// BenchmarkFetch8MB fetches an 8 MB file over loopback with the pin/tftp
// client at blksize 1468, lock-step and with Anticipate 8. bench/tftp/run.sh
// measures the concurrent case beside tftpd-hpa.
func BenchmarkFetch8MB(b *testing.B) {
	data := randomBytes(8_000_000, 99)
	sum := sha256.Sum256(data)
	for _, tc := range []struct {
		name  string
		antic uint
	}{{"lockstep", 0}, {"anticipate8", 8}} {
		b.Run(tc.name, func(b *testing.B) {
			ts := startServer(b, Config{Root: fstest.MapFS{"f": {Data: data}}, Anticipate: tc.antic})
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
	}
}
