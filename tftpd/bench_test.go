package tftpd

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"net"
	"testing"
	"testing/fstest"
	"time"
)

// BenchmarkFetch8MB fetches an 8 MB file over loopback at blksize 1468:
// with the pin/tftp client lock-step and with Anticipate 8, and with a
// minimal RFC 7440 client at windowsize 4 (what UEFI firmware asks for) and
// 16. bench/tftp/run.sh measures real clients and the concurrent case
// beside tftpd-hpa.
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
	for _, window := range []int{4, 16} {
		b.Run(fmt.Sprintf("windowsize%d", window), func(b *testing.B) {
			ts := startServer(b, Config{Root: fstest.MapFS{"f": {Data: data}}})
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for range b.N {
				got, err := fetchWindowed(ts.addr, "f", 1468, window)
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

// fetchWindowed is a minimal RFC 7440 client for loss-free loopback: it
// acknowledges every window's last block and the final one.
func fetchWindowed(addr, name string, blksize, window int) ([]byte, error) {
	srv, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		return nil, err
	}
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: srv.IP})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	rrq := fmt.Sprintf("\x00\x01%s\x00octet\x00blksize\x00%d\x00windowsize\x00%d\x00", name, blksize, window)
	if _, err := c.WriteToUDP([]byte(rrq), srv); err != nil {
		return nil, err
	}
	buf := make([]byte, 4+blksize)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, tid, err := c.ReadFromUDP(buf)
	if err != nil || n < 2 || buf[1] != opOACK {
		return nil, fmt.Errorf("no OACK: %v", err)
	}
	ack := func(b uint16) error { _, err := c.WriteToUDP([]byte{0, opACK, byte(b >> 8), byte(b)}, tid); return err }
	if err := ack(0); err != nil {
		return nil, err
	}
	var out []byte
	for blk := uint16(1); ; blk++ {
		n, err := c.Read(buf)
		if err != nil {
			return nil, err
		}
		if n < 4 || buf[1] != opDATA || binary.BigEndian.Uint16(buf[2:]) != blk {
			return nil, fmt.Errorf("want DATA %d, got % x", blk, buf[:min(n, 4)])
		}
		out = append(out, buf[4:n]...)
		if n-4 < blksize {
			return out, ack(blk)
		}
		if int(blk)%window == 0 {
			if err := ack(blk); err != nil {
				return nil, err
			}
		}
	}
}
