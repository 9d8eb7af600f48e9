//go:build linux

package routing

import (
	"syscall"
	"unsafe"
)

// adviseHuge asks for transparent huge pages on a large, not yet touched table: first-touch
// faults on 4 KiB pages cost more than computing the entries of a 65,536-node fat-tree. The
// memory stays the Go heap's; the advice only changes how the kernel backs it.
func adviseHuge(b []byte) {
	const huge = 2 << 20
	if len(b) < 32*huge {
		return
	}
	start := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	lo := (start + huge - 1) &^ (huge - 1)
	hi := (start + uintptr(len(b))) &^ (huge - 1)
	if hi <= lo {
		return
	}
	_ = syscall.Madvise(b[lo-start:hi-start], 14) // MADV_HUGEPAGE
}
