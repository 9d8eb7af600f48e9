package nodestate

import "testing"

// BenchmarkTrackerObserve applies one boot's worth of events per iteration, in memory.
func BenchmarkTrackerObserve(b *testing.B) {
	nodes := testNodes(b, 32)
	tr, err := NewTracker(nodes, "default", TrackerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	evs := []Event{EvDiscover, EvOffer, EvAck, EvNBP, EvDiscover, EvOffer, EvAck, EvScript, EvKernel, EvInitrd, EvDiscover, EvHealthOK}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		name := nodes[i%len(nodes)].Name
		for _, ev := range evs {
			tr.Observe(name, ev, "")
		}
	}
	b.ReportMetric(float64(b.N*len(evs))/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkStateSave writes the states of 40,960 booted nodes in one transaction: the worst flush
// at the paper machine's scale (every node on one server, every node changed).
func BenchmarkStateSave(b *testing.B) {
	nodes := testNodes(b, 40960)
	store, err := OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	tr, err := NewTracker(nodes, "default", TrackerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range nodes {
		for _, ev := range []Event{EvDiscover, EvOffer, EvAck, EvNBP, EvKernel, EvInitrd, EvDiscover, EvHealthOK} {
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
	store, err := OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	nodes := testNodes(b, 40960)
	tr, _ := NewTracker(nodes, "default", TrackerOptions{})
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
