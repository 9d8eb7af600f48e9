package fleet

import (
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"
)

func TestRecords(t *testing.T) {
	e := startEtcd(t, 1)
	c := open(t, e.Endpoints)
	ctx := ctxFor(t, 30*time.Second)

	for _, tc := range []struct {
		name string
		n    int
	}{
		{"one", 1},
		{"one txn", MaxTxnOps},
		{"over etcd's 128 ops", 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind := fmt.Sprintf("boot-%d", tc.n)
			recs := map[string][]byte{}
			for i := 0; i < tc.n; i++ {
				recs[fmt.Sprintf("node%04d", i)] = []byte(fmt.Sprintf(`{"state":"dhcp","n":%d}`, i))
			}
			if err := c.PutRecords(ctx, kind, recs); err != nil {
				t.Fatalf("PutRecords(%d): %v", tc.n, err)
			}
			got, err := c.Records(ctx, kind)
			if err != nil || !maps.EqualFunc(got, recs, func(a, b []byte) bool { return string(a) == string(b) }) {
				t.Fatalf("Records: %d records, %v; want %d", len(got), err, len(recs))
			}
			var del []string
			for name := range recs {
				if len(del) < tc.n/2+1 {
					del = append(del, name)
				}
			}
			if err := c.DeleteRecords(ctx, kind, del); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Records(ctx, kind); err != nil || len(got) != tc.n-len(del) {
				t.Errorf("after deleting %d: %d records, %v", len(del), len(got), err)
			}
		})
	}
	if err := c.PutRecords(ctx, "a/b", map[string][]byte{"x": nil}); err == nil {
		t.Error("kind with a slash accepted")
	}
	if err := c.PutRecords(ctx, "k", map[string][]byte{"": nil}); err == nil {
		t.Error("empty name accepted")
	}
	// Paging: more records than one range response holds.
	big := map[string][]byte{}
	for i := 0; i < pageSize+pageSize/2; i++ {
		big[fmt.Sprintf("n%05d", i)] = []byte{byte(i)}
	}
	if err := c.PutRecords(ctx, "big", big); err != nil {
		t.Fatal(err)
	}
	if got, err := c.Records(ctx, "big"); err != nil || len(got) != len(big) {
		t.Errorf("Records(big): %d, %v; want %d", len(got), err, len(big))
	}
}

// TestPutRecordsIfMember: a guarded write succeeds while the membership holds its key, and is
// refused without a membership, when it is not Valid or when its key no longer holds its lease.
func TestPutRecordsIfMember(t *testing.T) {
	e := startEtcd(t, 1)
	c := open(t, e.Endpoints)
	ctx := ctxFor(t, 20*time.Second)
	m, err := c.Join(ctx, "bs0", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string][]byte{}
	for i := 0; i < 100; i++ {
		recs[fmt.Sprintf("node%d", i)] = []byte("booted")
	}
	if err := c.PutRecordsIfMember(ctx, m, "state", recs); err != nil {
		t.Fatalf("guarded write as a member: %v", err)
	}
	// No membership is fenced, never an unguarded write.
	err = c.PutRecordsIfMember(ctx, nil, "state", map[string][]byte{"node0": []byte("unguarded")})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("guarded write without a membership: %v, want ErrFenced", err)
	}
	if got, _ := c.Records(ctx, "state"); string(got["node0"]) != "booted" {
		t.Fatalf("node0 = %q after a write without a membership", got["node0"])
	}
	// The member key taken away (as after an expiry the server did not see yet).
	if _, err := c.cli.Delete(ctx, c.keys.member("bs0")); err != nil {
		t.Fatal(err)
	}
	if !m.Valid() {
		t.Fatal("not Valid right after a renewal")
	}
	err = c.PutRecordsIfMember(ctx, m, "state", map[string][]byte{"node0": []byte("overwritten")})
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("guarded write without the member key: %v, want ErrFenced", err)
	}
	got, _ := c.Records(ctx, "state")
	if string(got["node0"]) != "booted" {
		t.Errorf("node0 = %q after a refused write", got["node0"])
	}
	m.Leave(ctx)
	if err := c.PutRecordsIfMember(ctx, m, "state", recs); !errors.Is(err, ErrFenced) {
		t.Errorf("guarded write after Leave: %v, want ErrFenced", err)
	}
}

func TestEvents(t *testing.T) {
	e := startEtcd(t, 1)
	a, b := open(t, e.Endpoints), open(t, e.Endpoints)
	ctx := ctxFor(t, 20*time.Second)
	var wg sync.WaitGroup
	seqs := make(chan int64, 20)
	for i, c := range []*Client{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				seq, err := c.AppendEvent(ctx, "takeover", []byte(fmt.Sprintf("w%d-%d", i, j)))
				if err != nil {
					t.Error(err)
					return
				}
				seqs <- seq
			}
		}()
	}
	wg.Wait()
	close(seqs)
	seen := map[int64]bool{}
	for s := range seqs {
		if seen[s] {
			t.Errorf("sequence %d given twice", s)
		}
		seen[s] = true
	}
	evs, err := b.Events(ctx, "takeover")
	if err != nil || len(evs) != 20 {
		t.Fatalf("Events: %d, %v", len(evs), err)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) || (i > 0 && ev.Revision <= evs[i-1].Revision) {
			t.Errorf("event %d: seq %d rev %d", i, ev.Seq, ev.Revision)
		}
	}
	if err := a.TrimEvents(ctx, "takeover", 5); err != nil {
		t.Fatal(err)
	}
	evs, err = b.Events(ctx, "takeover")
	if err != nil || len(evs) != 5 || evs[0].Seq != 16 {
		t.Errorf("after trimming to 5: %d events from %d, %v", len(evs), evs[0].Seq, err)
	}
	if seq, err := a.AppendEvent(ctx, "takeover", nil); err != nil || seq != 21 {
		t.Errorf("append after trim: seq %d, %v; want 21", seq, err)
	}
	if evs, err := a.Events(ctx, "other"); err != nil || len(evs) != 0 {
		t.Errorf("Events(other) = %v, %v", evs, err)
	}
}
