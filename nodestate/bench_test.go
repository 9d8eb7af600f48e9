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
