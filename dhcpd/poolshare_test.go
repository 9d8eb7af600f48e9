package dhcpd

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// limitedMAC is TestPoolShare's PoolOptions.Limited: mac(i) for i >= 100 (an unknown MAC, in
// bootsrv's words).
func limitedMAC(m net.HardwareAddr) bool { return int(m[4])<<8|int(m[5]) >= 100 }

// TestPoolShare: limited clients hold at most LimitedMax addresses together, offers and leases
// alike, whether they come by DISCOVER or straight with a REQUEST, and across a restart; the
// other clients always find the room left (issue 25: 17 unknown MACs emptied a 20-address pool and
// an inventory node then found it exhausted).
func TestPoolShare(t *testing.T) {
	share := ErrPoolShare.Error()
	tests := []struct {
		name        string
		first, last string
		max         int
		steps       []poolStep
	}{
		{"the share is kept, the others find the rest", "10.0.0.10", "10.0.0.15", 3, []poolStep{
			{op: "offer", mac: 100, want: "10.0.0.10"},
			{op: "offer", mac: 101, want: "10.0.0.11"},
			{op: "offer", mac: 102, want: "10.0.0.12"},
			{op: "offer", mac: 103, want: share},
			{op: "commit", mac: 103, ip: "10.0.0.15", want: share}, // a REQUEST without a DISCOVER
			{op: "offer", mac: 1, want: "10.0.0.13"},
			{op: "offer", mac: 2, want: "10.0.0.14"},
			{op: "offer", mac: 100, want: "10.0.0.10"},            // its offer counts already
			{op: "commit", mac: 100, ip: "10.0.0.15", want: "ok"}, // trading its offered address keeps the count
			{op: "lease", mac: 100, ip: "10.0.0.15", want: "1h0m0s"},
			// At 90 s the offers to 101 and 102 have expired: their room is the others' again.
			{at: 90 * time.Second, op: "offer", mac: 103, want: "10.0.0.10"},
			{at: 90 * time.Second, op: "offer", mac: 104, want: "10.0.0.11"},
			{at: 90 * time.Second, op: "offer", mac: 105, want: share},
			{at: 90 * time.Second, op: "release", mac: 100, ip: "10.0.0.15", want: "ok"},
			{at: 90 * time.Second, op: "offer", mac: 105, want: "10.0.0.12"},
			{at: 90 * time.Second, op: "offer", mac: 3, want: "10.0.0.13"},
		}},
		{"bound leases still count after a restart", "10.0.0.10", "10.0.0.12", 1, []poolStep{
			{op: "offer", mac: 100, want: "10.0.0.10"},
			{op: "commit", mac: 100, ip: "10.0.0.10", want: "ok"},
			{op: "reopen"},
			{op: "offer", mac: 101, want: share},
			{op: "offer", mac: 1, want: "10.0.0.11"},
			{op: "offer", mac: 100, want: "10.0.0.10"},
			{at: 2 * time.Hour, op: "offer", mac: 101, want: "10.0.0.12"}, // 100's lease expired
			{at: 2 * time.Hour, op: "offer", mac: 100, want: share},       // and its old address waits in vain
		}},
		{"no share: limited clients get nothing", "10.0.0.10", "10.0.0.11", 0, []poolStep{
			{op: "offer", mac: 100, want: share},
			{op: "commit", mac: 100, ip: "10.0.0.10", want: share},
			{op: "offer", mac: 1, want: "10.0.0.10"},
		}},
		{"holds: bound and unexpired, the client's own", "10.0.0.10", "10.0.0.11", 1, []poolStep{
			{op: "offer", mac: 1, want: "10.0.0.10"},
			{op: "holds", mac: 1, ip: "10.0.0.10", want: "false"}, // offered is not held
			{op: "commit", mac: 1, ip: "10.0.0.10", want: "ok"},
			{op: "holds", mac: 1, ip: "10.0.0.10", want: "true"},
			{op: "holds", mac: 2, ip: "10.0.0.10", want: "false"},
			{op: "holds", mac: 1, ip: "10.0.0.99", want: "false"},
			{at: 2 * time.Hour, op: "holds", mac: 1, ip: "10.0.0.10", want: "false"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runPoolSteps(t, tc.first, tc.last, PoolOptions{Limited: limitedMAC, LimitedMax: tc.max}, tc.steps)
		})
	}
}

// TestPoolShareStaleEntries: re-offers leave stale entries in the share's expiry heap; past a
// bound the heap is rebuilt, and the count stays right.
func TestPoolShareStaleEntries(t *testing.T) {
	clk := &fakeClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	p, err := OpenPool(filepath.Join(t.TempDir(), "l.db"), net.ParseIP("10.0.0.10"), net.ParseIP("10.0.0.11"),
		PoolOptions{OfferTime: time.Minute, Now: clk.now, Limited: limitedMAC, LimitedMax: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	for range 3000 {
		if ip, err := p.Offer(ctx, mac(100), nil); err != nil || ip.String() != "10.0.0.10" {
			t.Fatalf("re-offer: %v %v", ip, err)
		}
	}
	p.mu.Lock()
	n := len(p.limitedExp)
	p.mu.Unlock()
	if n > 2*1+1024 {
		t.Errorf("%d entries in the share's heap for one address", n)
	}
	if _, err := p.Offer(ctx, mac(101), nil); !errors.Is(err, ErrPoolShare) {
		t.Errorf("second limited client: %v, want ErrPoolShare", err)
	}
	clk.t = clk.t.Add(61 * time.Second)
	if ip, err := p.Offer(ctx, mac(101), nil); err != nil || ip.String() != "10.0.0.11" {
		t.Errorf("after the first offer expired: %v %v, want 10.0.0.11", ip, err)
	}
}
