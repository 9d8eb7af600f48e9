package dhcpd

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/insomniacslk/dhcp/dhcpv4"
)

// qop is one packet arriving at a queue: from client mac (a small number), with xid, at offset at
// from the test's start.
type qop struct {
	mac byte
	xid uint32
	mt  dhcpv4.MessageType
	at  time.Duration
}

func (o qop) job() job {
	var k dedupKey
	k.mac[0] = o.mac
	k.xid = dhcpv4.TransactionID{byte(o.xid >> 24), byte(o.xid >> 16), byte(o.xid >> 8), byte(o.xid)}
	k.mt = o.mt
	return job{key: k}
}

// name is how the test's expectations write a job: D1/7 is a DISCOVER from client 1 with xid 7.
func name(k dedupKey) string {
	t := map[dhcpv4.MessageType]string{dhcpv4.MessageTypeDiscover: "D", dhcpv4.MessageTypeRequest: "R",
		dhcpv4.MessageTypeRelease: "L", dhcpv4.MessageTypeDecline: "X", dhcpv4.MessageTypeInform: "I"}[k.mt]
	return fmt.Sprintf("%s%d/%d", t, k.mac[0], k.xid[3])
}

func disc(mac byte, xid uint32) qop { return qop{mac: mac, xid: xid, mt: dhcpv4.MessageTypeDiscover} }
func req(mac byte, xid uint32) qop  { return qop{mac: mac, xid: xid, mt: dhcpv4.MessageTypeRequest} }
func (o qop) after(d time.Duration) qop {
	o.at = d
	return o
}

// TestJobQueue pushes packets into a queue nobody serves, then lets one worker take everything at
// popAt, and checks what is served, in which order, and what is dropped and why.
func TestJobQueue(t *testing.T) {
	const size = 6
	ds := func(n int) []qop { // n DISCOVERs from clients 10, 11...
		var out []qop
		for i := 0; i < n; i++ {
			out = append(out, disc(byte(10+i), 1))
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		push   []qop
		popAt  time.Duration
		want   []string // served, or "outcome name" for a request dropped at the head
		pushed []string // push results other than queued, in order
	}{
		{
			name: "requests before discovers",
			push: append(ds(4), req(1, 1), qop{mac: 2, xid: 2, mt: dhcpv4.MessageTypeRelease}),
			want: []string{"R1/1", "L2/2", "D10/1", "D11/1", "D12/1", "D13/1"},
		},
		{
			name: "requests take the places of the DISCOVERs queued last in a full queue",
			push: []qop{disc(10, 1), disc(11, 1), req(1, 1), req(2, 1), req(3, 1), req(4, 1), req(5, 1), req(6, 1)},
			// size 6: the requests from 5 and 6 take the places of the last DISCOVERs.
			pushed: []string{"full, displacing D11/1", "full, displacing D10/1"},
			want:   []string{"R1/1", "R2/1", "R3/1", "R4/1", "R5/1", "R6/1"},
		},
		{
			name:   "a full queue of requests drops a DISCOVER and a REQUEST",
			push:   []qop{req(1, 1), req(2, 1), req(3, 1), req(4, 1), req(5, 1), req(6, 1), disc(10, 1), req(7, 1)},
			pushed: []string{"full", "full"},
			want:   []string{"R1/1", "R2/1", "R3/1", "R4/1", "R5/1", "R6/1"},
		},
		{
			name:   "a retransmit of a waiting request is a duplicate",
			push:   []qop{disc(1, 1), disc(1, 1), req(2, 1), req(2, 1)},
			pushed: []string{"duplicate", "duplicate"},
			want:   []string{"R2/1", "D1/1"},
		},
		{
			name: "a DISCOVER is superseded by its client's REQUEST",
			push: []qop{disc(1, 1), disc(2, 1), req(1, 1)},
			want: []string{"R1/1", "superseded D1/1", "D2/1"},
		},
		{
			name: "a DISCOVER is superseded by its client's REQUEST for another server's offer",
			push: []qop{disc(1, 1), req(1, 9)},
			want: []string{"R1/9", "superseded D1/1"},
		},
		{
			name: "a DISCOVER or REQUEST is superseded by a DISCOVER with a new xid",
			push: []qop{req(1, 1), disc(2, 1), disc(2, 2), disc(1, 3)},
			want: []string{"superseded R1/1", "superseded D2/1", "D2/2", "D1/3"},
		},
		{
			name: "a DISCOVER sent after its client's REQUEST is not superseded",
			push: []qop{req(1, 1), disc(1, 2)},
			want: []string{"superseded R1/1", "D1/2"},
		},
		{
			name: "a REQUEST's retransmit after its DISCOVER does not supersede the REQUEST",
			push: []qop{disc(1, 1), req(1, 1), disc(1, 1), req(1, 1)},
			// the second DISCOVER is a duplicate of the first, still waiting
			pushed: []string{"duplicate", "duplicate"},
			want:   []string{"R1/1", "superseded D1/1"},
		},
		{
			name:  "a request not repeated for StaleAfter is dropped",
			push:  []qop{disc(1, 1), req(2, 1), disc(3, 1).after(9 * time.Second)},
			popAt: 21 * time.Second,
			want:  []string{"stale R2/1", "stale D1/1", "D3/1"},
		},
		{
			name:   "a retransmit keeps a waiting request fresh",
			push:   []qop{disc(1, 1), req(2, 1), disc(1, 1).after(3 * time.Second), req(2, 1).after(3 * time.Second)},
			popAt:  21 * time.Second,
			pushed: []string{"duplicate", "duplicate"},
			want:   []string{"R2/1", "D1/1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t0 := time.Unix(1e9, 0)
			q := newJobQueue(size, defaultStaleAfter)
			var pushed []string
			for _, o := range tc.push {
				res, displaced := q.push(o.job(), t0.Add(o.at))
				switch {
				case displaced != nil:
					pushed = append(pushed, "full, displacing "+name(displaced.key))
				case res == pushDuplicate:
					pushed = append(pushed, "duplicate")
				case res == pushFull:
					pushed = append(pushed, "full")
				}
			}
			q.close()
			var got []string
			now := func() time.Time { return t0.Add(tc.popAt) }
			for {
				j, ok := q.pop(context.Background(), now, func(d dropped) { got = append(got, string(d.why)+" "+name(d.j.key)) })
				if !ok {
					break
				}
				got = append(got, name(j.key))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("served (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pushed, pushed); diff != "" {
				t.Errorf("push results (-want +got):\n%s", diff)
			}
			if len(q.byKey) != 0 || len(q.clients) != 0 {
				t.Errorf("the empty queue remembers %d requests and %d clients", len(q.byKey), len(q.clients))
			}
		})
	}
}

// TestJobQueueBurst checks the ceiling on serving requests first: with DISCOVERs waiting, the
// ninth request in a row waits for one DISCOVER.
func TestJobQueueBurst(t *testing.T) {
	q := newJobQueue(32, -1)
	now := time.Now()
	for i := 0; i < 3; i++ {
		q.push(disc(byte(100+i), 1).job(), now)
	}
	for i := 0; i < 20; i++ {
		q.push(req(byte(i), 1).job(), now)
	}
	q.close()
	var got string
	for {
		j, ok := q.pop(context.Background(), time.Now, func(d dropped) { t.Errorf("dropped %s %s", d.why, name(d.j.key)) })
		if !ok {
			break
		}
		got += name(j.key)[:1]
	}
	if want := "RRRRRRRRD" + "RRRRRRRRD" + "RRRR" + "D"; got != want {
		t.Errorf("order %s, want %s", got, want)
	}
}

// TestJobQueuePopStops checks that a worker waiting on an empty queue returns when its context ends.
func TestJobQueuePopStops(t *testing.T) {
	q := newJobQueue(4, -1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() {
		_, ok := q.pop(ctx, time.Now, func(dropped) {})
		done <- ok
	}()
	cancel()
	if ok := <-done; ok {
		t.Error("pop returned a job from an empty queue")
	}
}
