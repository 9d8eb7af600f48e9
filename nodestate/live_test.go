package nodestate

import (
	"fmt"
	"testing"
	"time"
)

// Live reads every node's counters and transfers, in inventory order, with a fixed number of
// allocations however many nodes have a transfer (one per node made the lock the DHCP path takes
// wait on the allocator at 40,960 nodes), and a node dropped by Retrack is not in it.
func TestLiveSnapshot(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	nodes := testNodes(t, 600) // more than two chunks of the lock
	tr, err := NewTracker(nodes, "default", TrackerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		tr.Observe(n.Name, EvDiscover, "")
		switch i % 3 {
		case 0: // no transfer yet
		case 1:
			x := tr.StartTransfer(n.Name, fmt.Sprintf("/boot/default/f%d", i), 1000)
			x.Add(int64(i))
		case 2: // given up: kept as LastGaveUp, and counted
			x := tr.StartTransfer(n.Name, "/boot/default/initrd.img", 1000)
			x.Add(10)
			tr.EndTransfer(n.Name, x, -1, -1, false)
			tr.Observe(n.Name, EvTransferFailed, "")
		}
	}
	now = now.Add(2 * time.Second)
	check := func(got []LiveNode, want []Node) {
		t.Helper()
		if len(got) != len(want) {
			t.Fatalf("%d nodes, want %d", len(got), len(want))
		}
		for k, ln := range got {
			i := 0
			fmt.Sscanf(want[k].Name[len("node"):], "%d", &i)
			if ln.Name != want[k].Name || ln.Attempt != 1 {
				t.Fatalf("node %d: %+v, want %s in attempt 1", k, ln, want[k].Name)
			}
			switch i % 3 {
			case 0:
				if ln.Transfer != nil || ln.GaveUp != 0 {
					t.Errorf("%s: %+v, want no transfer", ln.Name, ln)
				}
			case 1:
				x := ln.Transfer
				if x == nil || x.File != fmt.Sprintf("/boot/default/f%d", i) || x.Sent != int64(i) || x.Size != 1000 || x.Outcome != TransferRunning || x.Seconds != 2 {
					t.Errorf("%s: transfer %+v, want f%d running for 2 s with %d bytes", ln.Name, x, i, i)
				}
			case 2:
				if ln.GaveUp != 1 || ln.LastGaveUp == nil || ln.LastGaveUp.Sent != 10 || ln.Transfer == nil || ln.Transfer.Outcome != TransferFailed {
					t.Errorf("%s: %+v, want one transfer given up at 10 bytes", ln.Name, ln)
				}
			}
		}
	}
	check(tr.Live(), nodes)
	if a := testing.AllocsPerRun(5, func() { tr.Live() }); a > 4 {
		t.Errorf("Live allocates %.0f times for %d nodes, want at most 4", a, len(nodes))
	}
	if _, _, err := tr.Retrack(nodes[300:], nil, nil); err != nil {
		t.Fatal(err)
	}
	check(tr.Live(), nodes[300:])
}

// Live dates each node's state and attempt by the server's clock: a run that reads once a second
// takes the times from them, not from its poll.
func TestLiveTimes(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	nodes := testNodes(t, 2)
	tr, err := NewTracker(nodes, "default", TrackerOptions{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	tr.Observe(nodes[0].Name, EvDiscover, "")
	now = now.Add(1500 * time.Millisecond)
	tr.Observe(nodes[0].Name, EvOffer, "")
	now = now.Add(250 * time.Millisecond)
	got := tr.Live()
	if got[0].State != Offered || got[0].StateMs != 250 || got[0].AttemptMs != 1750 {
		t.Errorf("%+v, want offered for 250 ms, 1750 ms into its attempt", got[0])
	}
	if got[1].AttemptMs != 0 || got[1].State != Pending {
		t.Errorf("%+v, want pending with no attempt", got[1])
	}
}
