package nodestate

import (
	"slices"
	"sync/atomic"
	"time"
)

// LiveNode is what a boot run reads of one node while it boots: its state and attempt, its
// current transfer and how often this boot stumbled, without the history that NodeStatus
// carries (a run reads every node every second).
type LiveNode struct {
	Name    string `json:"name"`
	State   State  `json:"state"`
	Attempt int    `json:"attempt"`
	// Restarts counts the attempts of this boot that the node's firmware started over by itself
	// (a DISCOVER mid-boot, or after a failed transfer); GaveUp counts the transfers given up.
	// A boot begins with an attempt the operator armed (a reboot request) or one from pending,
	// booted or healthy; both counts start at 0 then. Left out at 0, as most nodes' are: a run
	// reads every node every poll, and the two zeros were a quarter of a node's bytes.
	Restarts int  `json:"restarts,omitempty"`
	GaveUp   int  `json:"gave_up,omitempty"`
	Reported bool `json:"reported,omitempty"`
	// Transfer is the node's current transfer, or its last one once it ended; LastGaveUp the last
	// transfer it gave up in this boot (its time is the firmware's patience, or less).
	Transfer   *Transfer `json:"transfer,omitempty"`
	LastGaveUp *Transfer `json:"last_gave_up,omitempty"`
	// StateMs is how long the node has been in State, and AttemptMs how long since its attempt's
	// DISCOVER, in milliseconds of the server's clock at the read: a run that reads every second
	// dates each phase to when it happened, not to the poll that saw it (0 when unknown).
	StateMs   int64 `json:"state_ms,omitempty"`
	AttemptMs int64 `json:"attempt_ms,omitempty"`
}

// msSince is the milliseconds from t to now; 0 for a zero t.
func msSince(now, t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return max(0, now.Sub(t).Milliseconds())
}

// Transfer is one file transfer to a node as the server saw it.
type Transfer struct {
	File string `json:"file"`
	Sent int64  `json:"sent"`
	// Size is the file's size in bytes, -1 while it is not known (a TFTP transfer in flight).
	Size int64 `json:"size"`
	// Seconds is the time since the request (until the end, once it ended) and RateMbps the
	// mean rate over it.
	Seconds  float64 `json:"seconds"`
	RateMbps float64 `json:"rate_mbps"`
	// Outcome is running, done or failed.
	Outcome string `json:"outcome"`
}

// Transfer outcomes.
const (
	TransferRunning = "running"
	TransferDone    = "done"
	TransferFailed  = "failed"
)

// liveNode is the tracker's side of LiveNode: the counters of the node's current boot and its
// transfers. It lives under the tracker's lock, but a transfer's byte count is an atomic, so
// that the serving goroutine adds to it without the lock the DHCP path takes.
type liveNode struct {
	restarts, gaveUp int
	cur              *TransferHandle
	lastFail         *Transfer
}

// TransferHandle counts the bytes of one transfer as they go out.
type TransferHandle struct {
	file  string
	start time.Time
	size  atomic.Int64
	sent  atomic.Int64
	end   atomic.Int64 // unix nanoseconds of the end; 0 while running
	ok    atomic.Bool
}

// Add counts n more bytes sent.
func (x *TransferHandle) Add(n int64) {
	if x != nil {
		x.sent.Add(n)
	}
}

// snapshot reads the transfer at now.
func (x *TransferHandle) snapshot(now time.Time) Transfer {
	out := Transfer{File: x.file, Sent: x.sent.Load(), Size: x.size.Load(), Outcome: TransferRunning}
	end := now
	if e := x.end.Load(); e != 0 {
		end = time.Unix(0, e)
		out.Outcome = TransferFailed
		if x.ok.Load() {
			out.Outcome = TransferDone
		}
	}
	if d := end.Sub(x.start).Seconds(); d > 0 {
		out.Seconds = d
		out.RateMbps = float64(out.Sent) * 8 / 1e6 / d
	}
	return out
}

// StartTransfer records that a transfer of file (size bytes, -1 when not known) to the named
// node began now; the handle counts its bytes and ends it (nil for a node not tracked here).
func (t *Tracker) StartTransfer(name, file string, size int64) *TransferHandle {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.nodes[name]; !ok {
		return nil
	}
	x := &TransferHandle{file: file, start: t.now()}
	x.size.Store(size)
	t.liveLocked(name).cur = x
	return x
}

// EndTransfer ends a transfer: sent bytes in all (-1: as counted) of size (-1: as known), and
// whether the node had the whole file. A failed one is kept as the node's LastGaveUp.
func (t *Tracker) EndTransfer(name string, x *TransferHandle, sent, size int64, ok bool) {
	if x == nil {
		return
	}
	if sent >= 0 {
		x.sent.Store(sent)
	}
	if size >= 0 {
		x.size.Store(size)
	}
	x.ok.Store(ok)
	now := t.now()
	x.end.Store(now.UnixNano())
	if ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, tracked := t.nodes[name]; tracked {
		last := x.snapshot(now)
		t.liveLocked(name).lastFail = &last
	}
}

// CurrentTransfer returns the named node's current transfer if it is of file and still running:
// how a TFTP transfer's end finds its start.
func (t *Tracker) CurrentTransfer(name, file string) *TransferHandle {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l, ok := t.live[name]; ok && l.cur != nil && l.cur.file == file && l.cur.end.Load() == 0 {
		return l.cur
	}
	return nil
}

func (t *Tracker) liveLocked(name string) *liveNode {
	if t.live == nil {
		t.live = map[string]*liveNode{}
	}
	l, ok := t.live[name]
	if !ok {
		l = &liveNode{}
		t.live[name] = l
	}
	return l
}

// countLocked updates the boot counters of node n for event ev, which moves it from from to
// to: a new attempt is a restart of the boot, or the start of a new one; a failed transfer
// before the node booted is one given up.
func (t *Tracker) countLocked(n *NodeStatus, ev Event, from, to State, changed bool) {
	switch {
	case ev == EvTransferFailed && (changed && to == Failed || !changed && from == Failed):
		t.liveLocked(n.Name).gaveUp++
	case changed && to == Discover:
		l := t.liveLocked(n.Name)
		if ev == EvRebootDiscover || from == Pending || from == Booted || from == Healthy {
			l.restarts, l.gaveUp, l.lastFail = 0, 0, nil
			return
		}
		l.restarts++
	}
}

// Live returns every node's LiveNode, in inventory order. A run asks for it every poll, and
// the DHCP path waits for the same lock: the lock is held for liveChunk nodes at a time, only to
// copy their counters, and the transfers are read from their atomics after it, into one block
// (with one allocation per node, 40,960 nodes held the lock for about 100 ms).
func (t *Tracker) Live() []LiveNode {
	t.mu.Lock()
	names := slices.Clone(t.order) // Retrack rebuilds t.order in place
	t.mu.Unlock()
	out := make([]LiveNode, 0, len(names))
	cur := make([]*TransferHandle, 0, len(names))
	running := 0
	for i := 0; i < len(names); i += liveChunk {
		t.mu.Lock()
		now := t.now()
		for _, name := range names[i:min(i+liveChunk, len(names))] {
			n, ok := t.nodes[name]
			if !ok {
				continue // dropped since (Retrack)
			}
			ln := LiveNode{Name: name, State: n.State, Attempt: n.Attempt, Reported: n.Reported,
				StateMs: msSince(now, n.Since), AttemptMs: msSince(now, n.Times[Discover])}
			var x *TransferHandle
			if l, ok := t.live[name]; ok {
				ln.Restarts, ln.GaveUp, ln.LastGaveUp, x = l.restarts, l.gaveUp, l.lastFail, l.cur
			}
			if x != nil {
				running++
			}
			out, cur = append(out, ln), append(cur, x)
		}
		t.mu.Unlock()
	}
	now := t.now()
	block := make([]Transfer, 0, running)
	for i, x := range cur {
		if x != nil {
			block = append(block, x.snapshot(now))
			out[i].Transfer = &block[len(block)-1]
		}
	}
	return out
}

// liveChunk is how many nodes Live reads under one hold of the tracker's lock.
const liveChunk = 256
