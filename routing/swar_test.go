package routing

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestRelaxAndMasksMatchBytewise(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	pick := func() uint8 {
		switch r.IntN(6) {
		case 0:
			return inf
		case 1:
			return uint8(0x7b + r.IntN(6)) // around the SWAR limit
		default:
			return uint8(r.IntN(8))
		}
	}
	for trial := 0; trial < 2000; trial++ {
		n := r.IntN(40)
		src, dst := make([]uint8, n), make([]uint8, n)
		for i := range src {
			src[i], dst[i] = pick(), pick()
		}
		want := slices.Clone(dst)
		relaxBytes(want, src)
		got := slices.Clone(dst)
		relax(got, src)
		if !slices.Equal(got, want) {
			t.Fatalf("relax(%v, %v) = %v, want %v", dst, src, got, want)
		}
		W := 2
		masks := make([]uint64, n*W)
		closerMasks(masks, W, 1<<5, 1, src, dst)
		for i := range src {
			if got, want := masks[i*W+1] == 1<<5, src[i] < dst[i]; got != want || masks[i*W] != 0 {
				t.Fatalf("closerMasks at %d: %v < %v gave %v", i, src[i], dst[i], got)
			}
		}
	}
}
