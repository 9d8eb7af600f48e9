package dhcpd

import (
	"context"
	"sync"
	"time"

	"github.com/insomniacslk/dhcp/dhcpv4"
)

// Queue classes, also the label of the queue-wait metric. A DISCOVER only starts an exchange; every
// other message (REQUEST, DECLINE, RELEASE, INFORM) finishes or follows one, and a client that
// waited too long for its ACK starts over with a DISCOVER: under a storm those are served first.
const (
	classRequest  = "request"
	classDiscover = "discover"
)

// requestBurst bounds how many non-DISCOVERs are served in a row while DISCOVERs wait: the message
// type is the client's choice, and a flood of REQUESTs must not starve every new client.
const requestBurst = 8

// defaultStaleAfter is Config.StaleAfter's default: longer than every retransmit interval of
// udhcpc (-T 3), RFC 2131 clients (4 and 8 s, then 16 s, each ±1 s) and PXE ROMs (4, 8, 16 s) but
// their last ones, so that a queued request nobody has repeated for that long has been given up.
const defaultStaleAfter = 20 * time.Second

// queued is one request waiting for a worker.
type queued struct {
	j    job
	seq  uint64    // arrival order of the first copy
	last time.Time // arrival of the newest copy: a retransmit refreshes it
}

// clientState is what the queue knows of a MAC while some of its requests wait: enough to tell
// that a waiting request has been superseded by a later one from the same client.
type clientState struct {
	waiting int                  // its requests in the queue
	xid     dhcpv4.TransactionID // of its newest DISCOVER or REQUEST
	xidSeq  uint64               // arrival of the first packet with that xid
	reqSeq  uint64               // arrival of its newest REQUEST, 0 if none since it had nothing queued
}

// pushResult says what push did with a request.
type pushResult int

const (
	pushQueued    pushResult = iota
	pushDuplicate            // a copy waits already (its arrival time was refreshed)
	pushFull                 // no room
)

// jobQueue is the bounded queue between the readers and the workers: REQUESTs (and every other
// message but DISCOVER) before DISCOVERs, at most one copy of a (MAC, xid, type) waiting, and a
// request dropped at the head when its client has moved on (superseded) or stopped asking (stale).
type jobQueue struct {
	size       int
	staleAfter time.Duration // <= 0: never stale by age

	// avail holds one token per queued request, so that a worker blocks on a channel (and its
	// context) rather than on a condition variable; closing it lets the workers drain and stop.
	avail chan struct{}

	mu       sync.Mutex
	requests []*queued // FIFO
	discover []*queued // FIFO
	burst    int       // requests served in a row while DISCOVERs waited
	seq      uint64
	byKey    map[dedupKey]*queued
	clients  map[[16]byte]*clientState
}

func newJobQueue(size int, staleAfter time.Duration) *jobQueue {
	return &jobQueue{
		size: size, staleAfter: staleAfter, avail: make(chan struct{}, size),
		byKey: map[dedupKey]*queued{}, clients: map[[16]byte]*clientState{},
	}
}

func class(mt dhcpv4.MessageType) string {
	if mt == dhcpv4.MessageTypeDiscover {
		return classDiscover
	}
	return classRequest
}

// push queues j, which arrived at now, unless a copy already waits or there is no room. A request
// finds room in a full queue by displacing the DISCOVER queued last (returned, to be counted).
func (q *jobQueue) push(j job, now time.Time) (res pushResult, displaced *job) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.seq++
	if c := q.clients[j.key.mac]; c != nil {
		c.saw(j.key, q.seq)
	}
	if e := q.byKey[j.key]; e != nil {
		e.last = now
		return pushDuplicate, nil
	}
	cls := class(j.key.mt)
	if len(q.requests)+len(q.discover) >= q.size {
		if cls == classDiscover || len(q.discover) == 0 {
			return pushFull, nil
		}
		e := q.discover[len(q.discover)-1]
		q.discover[len(q.discover)-1] = nil
		q.discover = q.discover[:len(q.discover)-1]
		q.forget(e)
		displaced = &e.j
	}
	e := &queued{j: j, seq: q.seq, last: now}
	q.byKey[j.key] = e
	c := q.clients[j.key.mac]
	if c == nil {
		c = &clientState{}
		c.saw(j.key, q.seq)
		q.clients[j.key.mac] = c
	}
	c.waiting++
	if cls == classDiscover {
		q.discover = append(q.discover, e)
	} else {
		q.requests = append(q.requests, e)
	}
	if displaced == nil {
		q.avail <- struct{}{} // never blocks: one token per queued request, at most size
	}
	return pushQueued, displaced
}

// saw records that the client sent k at seq.
func (c *clientState) saw(k dedupKey, seq uint64) {
	switch k.mt {
	case dhcpv4.MessageTypeDiscover, dhcpv4.MessageTypeRequest:
	default:
		return
	}
	if k.xid != c.xid || c.xidSeq == 0 {
		c.xid, c.xidSeq = k.xid, seq
	}
	if k.mt == dhcpv4.MessageTypeRequest {
		c.reqSeq = seq
	}
}

// superseded reports whether the client has moved past e: a DISCOVER once it has sent a REQUEST
// (it has an offer to take) or a DISCOVER with another xid (it started over), a REQUEST once it
// has sent a DISCOVER or REQUEST with another xid. Answering those is wasted work.
func (c *clientState) superseded(e *queued) bool {
	movedOn := c.xid != e.j.key.xid && c.xidSeq > e.seq
	switch e.j.key.mt {
	case dhcpv4.MessageTypeDiscover:
		return movedOn || c.reqSeq > e.seq
	case dhcpv4.MessageTypeRequest:
		return movedOn
	}
	return false
}

// forget removes e's de-duplication entry and its client's count. Called with mu held.
func (q *jobQueue) forget(e *queued) {
	delete(q.byKey, e.j.key)
	if c := q.clients[e.j.key.mac]; c != nil {
		if c.waiting--; c.waiting <= 0 {
			delete(q.clients, e.j.key.mac)
		}
	}
}

// dropped says why pop skipped a request.
type dropped struct {
	j   job
	why Outcome // OutcomeSuperseded or OutcomeStale
}

// pop waits for the next request to serve, passing the ones it skips to drop (called without the
// lock held). It returns false once the queue is closed and empty, or ctx ends.
func (q *jobQueue) pop(ctx context.Context, now func() time.Time, drop func(dropped)) (job, bool) {
	for {
		select {
		case _, ok := <-q.avail:
			if !ok {
				return job{}, false
			}
		case <-ctx.Done():
			return job{}, false
		}
		j, d, ok := q.take(now())
		if ok {
			return j, true
		}
		drop(d)
	}
}

// take removes the head request (the requests' queue first, but at most requestBurst in a row
// while DISCOVERs wait) and says whether it is still worth answering. A token has been taken for
// it, so the queue is not empty.
func (q *jobQueue) take(now time.Time) (job, dropped, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var e *queued
	if len(q.requests) > 0 && (len(q.discover) == 0 || q.burst < requestBurst) {
		e, q.requests[0] = q.requests[0], nil
		q.requests = q.requests[1:]
		if len(q.discover) > 0 {
			q.burst++
		} else {
			q.burst = 0
		}
	} else {
		e, q.discover[0] = q.discover[0], nil
		q.discover = q.discover[1:]
		q.burst = 0
	}
	c := q.clients[e.j.key.mac]
	q.forget(e)
	switch {
	case c != nil && c.superseded(e):
		return job{}, dropped{e.j, OutcomeSuperseded}, false
	case q.staleAfter > 0 && now.Sub(e.last) > q.staleAfter:
		return job{}, dropped{e.j, OutcomeStale}, false
	}
	return e.j, dropped{}, true
}

// close ends pop once the queue is empty. No push may follow.
func (q *jobQueue) close() { close(q.avail) }

// len is how many requests wait.
func (q *jobQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.requests) + len(q.discover)
}
