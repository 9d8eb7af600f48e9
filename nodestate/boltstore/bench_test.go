package boltstore

import (
	"fmt"
	"net"
	"testing"

	"github.com/bootfabric/bootfabric/nodestate"
)

// benchNodes returns n inventory nodes (nodeNNNNN, MACs 52:54:00:...).
func benchNodes(b *testing.B, n int) []nodestate.Node {
	out := make([]nodestate.Node, n)
	for i := range out {
		mac, err := net.ParseMAC(fmt.Sprintf("52:54:00:%02x:%02x:%02x", i>>16, (i>>8)&0xff, i&0xff))
		if err != nil {
			b.Fatal(err)
		}
		out[i] = nodestate.Node{Name: fmt.Sprintf("node%05d", i), MAC: mac, Position: fmt.Sprintf("n%d", i)}
	}
	return out
}

// BenchmarkStateSave writes the states of 40,960 booted nodes in one transaction: the worst flush
// at the paper machine's scale (every node on one server, every node changed).
func BenchmarkStateSave(b *testing.B) {
	nodes := benchNodes(b, 40960)
	store, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	tr, err := nodestate.NewTracker(nodes, "default", nodestate.TrackerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		for _, ev := range []nodestate.Event{nodestate.EvDiscover, nodestate.EvOffer, nodestate.EvAck, nodestate.EvNBP, nodestate.EvKernel, nodestate.EvInitrd, nodestate.EvDiscover, nodestate.EvHealthOK} {
			tr.Observe(n.Name, ev, "")
		}
	}
	snap := tr.Nodes()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := store.Save(snap); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStateFlush256 is one flush of 256 changed nodes (one server's share of the paper
// machine under bcda with 160 servers) into a database holding 40,960.
func BenchmarkStateFlush256(b *testing.B) {
	store, err := Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	nodes := benchNodes(b, 40960)
	tr, _ := nodestate.NewTracker(nodes, "default", nodestate.TrackerOptions{})
	all := tr.Nodes()
	if err := store.Save(all); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := (i * 256) % (len(all) - 256)
		if err := store.Save(all[k : k+256]); err != nil {
			b.Fatal(err)
		}
	}
}
