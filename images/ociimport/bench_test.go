package ociimport

import (
	"archive/tar"
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/images"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BenchmarkImport imports images of 30 MB and 300 MB (three layers of 1 MB files, about half
// compressible, written to disk and never held in memory) and reports the peak of the live heap
// during the import: it should not grow with the image.
//
//	go test -run '^$' -bench Import -benchtime 1x ./images/ociimport
func BenchmarkImport(b *testing.B) {
	for _, mb := range []int{30, 300} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			dir := b.TempDir()
			src := writeLayout(b, dir, benchImage(b, dir, mb))
			b.SetBytes(int64(mb) << 20)
			var peak uint64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				st, err := images.Create(filepath.Join(dir, fmt.Sprint("store", i)))
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				stop := sampleHeap(&peak)
				_, err = Import(context.Background(), st, Options{Source: src, Name: "bench", TempDir: dir})
				stop()
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				os.RemoveAll(st.Dir())
				b.StartTimer()
			}
			b.ReportMetric(float64(peak)/1e6, "peak-heap-MB")
		})
	}
}

// sampleHeap records the largest live heap (bytes in heap objects) seen every millisecond until
// the returned function is called.
func sampleHeap(peak *uint64) func() {
	var done atomic.Bool
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for !done.Load() {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > *peak {
				*peak = v
			}
			time.Sleep(time.Millisecond) // the sampling period
		}
	}()
	return func() { done.Store(true); <-finished }
}

// benchImage writes three layer tars of about mb/3 MB each under dir and makes an image of them.
func benchImage(b *testing.B, dir string, mb int) v1.Image {
	img := empty.Image
	for l := 0; l < 3; l++ {
		path := filepath.Join(dir, fmt.Sprintf("layer%d.tar", l))
		files := mb / 3
		if err := writeBenchLayer(path, l, files); err != nil {
			b.Fatal(err)
		}
		layer, err := tarball.LayerFromFile(path)
		if err == nil {
			img, err = mutate.AppendLayers(img, layer)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	return img
}

// writeBenchLayer writes a layer of n files of 1 MiB; layer 0 also has the kernel.
func writeBenchLayer(path string, layer, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	bw := bufio.NewWriter(f)
	tw := tar.NewWriter(bw)
	rng := rand.New(rand.NewPCG(uint64(layer), 7))
	if layer == 0 {
		tw.WriteHeader(&tar.Header{Name: "boot/vmlinuz-6.1.0", Typeflag: tar.TypeReg, Mode: 0o644, Size: 6})
		tw.Write([]byte("KERNEL"))
	}
	buf := make([]byte, 1<<20)
	for i := 0; i < n; i++ {
		// Half random, half a letter repeated: about the ratio gzip gets on binaries.
		for j := range buf {
			if j%2048 < 1024 {
				buf[j] = byte(rng.Uint32())
			} else {
				buf[j] = 'a' + byte(i%26)
			}
		}
		h := &tar.Header{Name: fmt.Sprintf("usr/lib/l%d/f%05d", layer, i), Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(buf))}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if _, err := tw.Write(buf); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return bw.Flush()
}
