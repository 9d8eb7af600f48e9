package dhcpd

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// commitBatch is one group commit: every Commit that dirtied an address before
// the writer took the batch waits for done and returns err.
type commitBatch struct {
	done chan struct{}
	err  error
}

var leaseBucket = []byte("leases")

// openLeaseDB opens the bbolt lease file. The freelist is rebuilt when the
// file is opened instead of being written by every commit: a lease commit
// then writes only the leaf it changed and the meta page.
func openLeaseDB(path string) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("dhcpd: open lease store %s: locked by another process (another server on this state directory?): %w", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("dhcpd: open lease store %s: %w", path, err)
	}
	return db, nil
}

// loadLeases reads every lease of the file into the tables, creating the
// bucket of a new file.
func (p *Pool) loadLeases(tx *bolt.Tx) error {
	b, err := tx.CreateBucketIfNotExists(leaseBucket)
	if err != nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		if len(k) != 4 {
			return fmt.Errorf("lease key %x: want 4 bytes", k)
		}
		rec, err := decodeLease(v)
		if err != nil {
			return fmt.Errorf("lease %v: %w", net.IP(k), err)
		}
		ip := binary.BigEndian.Uint32(k)
		if rec.state == LeaseOffered {
			return nil // written by an older version; offers are not kept
		}
		if rec.mac.n > 0 {
			p.byMAC[rec.mac] = ip
			rec.limited = p.isLimited(rec.mac.hw())
		}
		p.byIP[ip] = rec
		return nil
	})
}

// markLocked queues ip's current state for the writer and returns the batch
// it will be written in.
func (p *Pool) markLocked(ip uint32) *commitBatch {
	p.dirty[ip] = struct{}{}
	select {
	case p.kick <- struct{}{}:
	default:
	}
	return p.pending
}

// writer commits the dirty addresses, all of them in one transaction, until
// Close; then it writes what is left and returns.
func (p *Pool) writer() {
	defer close(p.done)
	for {
		select {
		case <-p.kick:
			p.flush()
		case <-p.stop:
			p.flush()
			return
		}
	}
}

type leaseWrite struct {
	key [4]byte
	ip  uint32
	put bool     // false: delete
	rec leaseRec // the version written
}

// flush writes the current state of every dirty address in one transaction,
// then wakes the Commits waiting for it. The lock is held only to copy the
// records, never across the write.
func (p *Pool) flush() {
	p.mu.Lock()
	if len(p.dirty) == 0 {
		p.mu.Unlock()
		return
	}
	writes := make([]leaseWrite, 0, len(p.dirty))
	for ip := range p.dirty {
		w := leaseWrite{ip: ip}
		binary.BigEndian.PutUint32(w.key[:], ip)
		// An offer is not a lease: the address is written as free (its
		// previous lease ended, or it would not have been offered).
		if r, held := p.byIP[ip]; held && r.state != LeaseOffered {
			w.put, w.rec = true, r // encoded outside the lock
		}
		writes = append(writes, w)
	}
	clear(p.dirty)
	b := p.pending
	p.pending = newBatch()
	p.mu.Unlock()

	// Keys in order: bbolt splits and fills pages best that way.
	slices.SortFunc(writes, func(a, b leaseWrite) int { return bytes.Compare(a.key[:], b.key[:]) })
	t0 := time.Now()
	err := p.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(leaseBucket)
		for _, w := range writes {
			var err error
			if w.put {
				err = bk.Put(w.key[:], encodeLease(w.rec))
			} else {
				err = bk.Delete(w.key[:])
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
	p.m.commitSeconds.Observe(time.Since(t0).Seconds())
	if err != nil {
		b.err = fmt.Errorf("dhcpd: write %d leases to %s: %w", len(writes), p.db.Path(), err)
	} else {
		p.m.tx.Inc()
		p.m.nTx.Add(1)
		p.m.writes.Add(float64(len(writes)))
		p.m.nWrites.Add(uint64(len(writes)))
		p.mu.Lock()
		for _, w := range writes {
			if r, held := p.byIP[w.ip]; held && w.put && r.gen == w.rec.gen {
				r.durable = w.rec.gen
				p.byIP[w.ip] = r
			}
		}
		p.mu.Unlock()
	}
	close(b.done)
}

func newBatch() *commitBatch { return &commitBatch{done: make(chan struct{})} }

// Lease record: state(1) expiry-unix-nanos(8) maclen(1) mac.
func encodeLease(r leaseRec) []byte {
	v := make([]byte, 10+int(r.mac.n))
	v[0] = byte(r.state)
	binary.BigEndian.PutUint64(v[1:9], uint64(r.expiry))
	v[9] = r.mac.n
	copy(v[10:], r.mac.b[:r.mac.n])
	return v
}

func decodeLease(v []byte) (leaseRec, error) {
	if len(v) < 10 || len(v) != 10+int(v[9]) || v[9] > 16 {
		return leaseRec{}, fmt.Errorf("record of %d bytes is malformed", len(v))
	}
	r := leaseRec{state: LeaseState(v[0]), expiry: int64(binary.BigEndian.Uint64(v[1:9])), mac: keyOf(v[10:])}
	if r.state < LeaseOffered || r.state > LeaseReleased {
		return leaseRec{}, fmt.Errorf("unknown lease state %d", r.state)
	}
	return r, nil
}
