//go:build !linux

package routing

func adviseHuge([]byte) {}
