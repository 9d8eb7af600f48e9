package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// StateFile is the name of the boot-state database in the state directory.
const StateFile = "nodes.db"

var (
	nodesBucket = []byte("nodes")
	metaBucket  = []byte("meta")
	versionKey  = []byte("version")
)

const stateVersion = "1"

// Store keeps the boot states in a bbolt database: one key per node, so that a flush writes only
// the nodes that changed, in one transaction committed with fsync. bbolt locks the file, so two
// servers cannot share a state directory by mistake.
type Store struct {
	db *bolt.DB
}

// Open opens (creating when missing) the state database in dir. A damaged file (zero-length,
// a bad meta page, a corrupted page or record) is a *DamagedError naming the file and the way out
// (Recover, bootctl serve --recover); bbolt's panics on corrupt pages are caught, never let
// through, and a damaged file is never taken for an empty one.
func Open(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	path := filepath.Join(dir, StateFile)
	if fi, err := os.Stat(path); err == nil {
		if fi.Size() == 0 {
			// bbolt would take a zero-length file for a new one and start empty without a word.
			return nil, &DamagedError{Path: path, Why: "zero-length file"}
		}
		if err := checkFile(path); err != nil {
			return nil, err
		}
	}
	var db *bolt.DB
	err := guard(func() (err error) {
		// 0600 like its siblings (leases.db, the secrets): it holds the nodes' addresses and
		// health reports.
		db, err = bolt.Open(path, 0o600, &bolt.Options{
			Timeout: time.Second,
			// Address space, not memory: a map that does not have to grow as the file does spares
			// the flush bbolt's remapping, which copies every cached page out of the old map.
			InitialMmapSize: 256 << 20,
			// Like dhcpd's lease pool: the free list is rebuilt when the file is opened instead of
			// being written with every commit (checkFile has walked the pages first).
			NoFreelistSync: true, FreelistType: bolt.FreelistMapType,
		})
		return err
	})
	if err != nil {
		return nil, openError(path, err)
	}
	// bbolt grows a file whose map is larger than AllocSize (16 MiB by default) by AllocSize at a
	// time, so the large initial map above made a 3-node state file 16.8 MB. Small steps keep the
	// file near its contents; a step is one truncate, rare at a few hundred bytes per node.
	db.AllocSize = stateAllocSize
	err = guard(func() error { return db.Update(initBuckets) })
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// stateAllocSize is how much a state file grows at a time.
const stateAllocSize = 256 << 10

// checkFile checks an existing state file before it is opened for writing: its page tree is walked
// on the raw bytes (walkPages), then the file is opened read-only for bbolt's own consistency check
// and every record is decoded. Opened for writing, bbolt would rebuild its free list by walking the
// tree in a goroutine where a corrupt page is a panic nothing can recover.
func checkFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("state %s: %w", path, err)
	}
	if err := walkPages(data); err != nil {
		return &DamagedError{Path: path, Why: err.Error()}
	}
	var db *bolt.DB
	err = guard(func() (err error) {
		db, err = bolt.Open(path, 0o444, &bolt.Options{ReadOnly: true, Timeout: time.Second})
		return err
	})
	if err != nil {
		return openError(path, err)
	}
	defer db.Close()
	if err := checkDB(db); err != nil {
		return &DamagedError{Path: path, Why: err.Error()}
	}
	return nil
}

// openError explains an error of bolt.Open.
func openError(path string, err error) error {
	if errors.Is(err, berrors.ErrTimeout) {
		return fmt.Errorf("state %s: locked by another process (another boot server on this state_dir?)", path)
	}
	if isDamage(err) {
		return &DamagedError{Path: path, Why: err.Error()}
	}
	return fmt.Errorf("state %s: %w", path, err)
}

func initBuckets(tx *bolt.Tx) error {
	meta, err := tx.CreateBucketIfNotExists(metaBucket)
	if err != nil {
		return err
	}
	if v := meta.Get(versionKey); v != nil && string(v) != stateVersion {
		return fmt.Errorf("version %s, want %s (move the file away to start afresh)", v, stateVersion)
	}
	if err := meta.Put(versionKey, []byte(stateVersion)); err != nil {
		return err
	}
	_, err = tx.CreateBucketIfNotExists(nodesBucket)
	return err
}

// DamagedError is a state file that cannot be read whole.
type DamagedError struct {
	Path string
	Why  string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("state %s is damaged (%s): run bootctl serve --recover to keep it aside as %s.damaged-TIME and start from the records that can be read", e.Path, e.Why, filepath.Base(e.Path))
}

// guard runs f, turning a panic (bbolt panics on some corrupt pages) into an error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt database: %v", r)
		}
	}()
	return f()
}

// isDamage reports whether an error of bolt.Open means the file is not a sound database: every
// error but the lock's timeout and the system's own (permissions, a missing directory), which
// come as *fs.PathError. bbolt reports some damage only in words ("file size too small").
func isDamage(err error) bool {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return false
	}
	return !errors.Is(err, berrors.ErrTimeout)
}

// checkDB runs bbolt's consistency check (every page reachable once, none freed twice) and decodes
// every record, so that damage shows at start and not as a panic in the middle of a boot.
func checkDB(db *bolt.DB) error {
	return guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			for err := range tx.Check() {
				return err // the first problem is enough to say the file is damaged
			}
			b := tx.Bucket(nodesBucket)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				_, err := nodestate.DecodeNode(k, v)
				return err
			})
		})
	})
}

// Recovery says what Recover did.
type Recovery struct {
	// Damaged is where the damaged file was kept.
	Damaged string `json:"damaged"`
	// Recovered and Lost count the node records read back and those that could not be.
	Recovered int `json:"recovered"`
	Lost      int `json:"lost"`
}

// Recover moves a damaged state file aside (STATE_FILE.damaged-TIME, kept for inspection) and
// writes a new one with every node record that can still be read from it. With no damaged file it
// does nothing and returns a zero Recovery.
func Recover(dir string, now time.Time) (Recovery, error) {
	path := filepath.Join(dir, StateFile)
	s, err := Open(dir)
	if err == nil {
		return Recovery{}, s.Close()
	}
	if _, ok := errors.AsType[*DamagedError](err); !ok {
		return Recovery{}, err
	}
	rec := Recovery{Damaged: path + ".damaged-" + now.UTC().Format("20060102T150405Z")}
	if err := os.Rename(path, rec.Damaged); err != nil {
		return Recovery{}, fmt.Errorf("state %s: keeping the damaged file: %w", path, err)
	}
	nodes, lost := salvage(rec.Damaged)
	rec.Recovered, rec.Lost = len(nodes), lost
	s, err = Open(dir)
	if err != nil {
		return rec, err
	}
	if err := s.Save(nodes); err != nil {
		s.Close()
		return rec, err
	}
	return rec, s.Close()
}

// salvage reads what it can of a damaged database. It does not trust the file's page tree (a
// corrupt branch page would hide every record under it): it scans every page whose header says
// leaf, reads its key/value elements within bounds, and keeps each record that decodes; where
// stale copies of a record survive in freed pages, the one seen last wins. lost counts the keys
// found only with records that do not decode.
func salvage(path string) (nodes []nodestate.NodeStatus, lost int) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, 0
	}
	best := map[string]nodestate.NodeStatus{}
	failed := map[string]bool{}
	psize := bboltPageSize(data)
	for off := 2 * psize; off+pageHeaderLen <= len(data); off += psize {
		for _, kv := range leafElements(data, off, psize) {
			n, err := nodestate.DecodeNode(kv[0], kv[1])
			if err != nil {
				failed[string(kv[0])] = true
				continue
			}
			if old, ok := best[n.Name]; !ok || newer(n, old) {
				best[n.Name] = n
			}
		}
	}
	for _, n := range best {
		nodes = append(nodes, n)
	}
	delete(failed, string(versionKey)) // the meta bucket's
	for k := range failed {
		if _, ok := best[k]; !ok {
			lost++
		}
	}
	slices.SortFunc(nodes, func(a, b nodestate.NodeStatus) int { return strings.Compare(a.Name, b.Name) })
	return nodes, lost
}

// bbolt's on-disk layout, as far as salvage needs it (go.etcd.io/bbolt/internal/common): a page
// header of id (8 bytes), flags (2), count (2) and overflow (4), then count leaf elements of flags,
// pos, ksize and vsize (4 bytes each, pos counted from the element), in the machine's byte order.
const (
	pageHeaderLen  = 16
	leafElemLen    = 16
	leafPageFlag   = 0x02
	bucketLeafFlag = 0x01
	metaMagic      = 0xED0CDAED
)

// bboltPageSize reads the page size from the first sound meta page (the system's 4096 otherwise).
func bboltPageSize(data []byte) int {
	for _, off := range []int{0, 4096} {
		if len(data) >= off+pageHeaderLen+12 && binary.NativeEndian.Uint32(data[off+pageHeaderLen:]) == metaMagic {
			if ps := int(binary.NativeEndian.Uint32(data[off+pageHeaderLen+8:])); ps >= 512 && ps <= 1<<16 {
				return ps
			}
		}
	}
	return 4096
}

// leafElements returns the key/value pairs of the leaf page at off (none when it is not a leaf
// page), skipping nested buckets and anything out of bounds.
func leafElements(data []byte, off, psize int) [][2][]byte {
	ne := binary.NativeEndian
	if ne.Uint16(data[off+8:]) != leafPageFlag {
		return nil
	}
	count, overflow := int(ne.Uint16(data[off+10:])), int(ne.Uint32(data[off+12:]))
	end := off + psize*(overflow+1) // the page and its overflow pages
	if overflow < 0 || overflow > len(data)/psize || end > len(data) || pageHeaderLen+count*leafElemLen > end-off {
		return nil // a header that does not fit its page is not a leaf page's
	}
	var out [][2][]byte
	for i := range count {
		e := off + pageHeaderLen + i*leafElemLen
		flags, pos := ne.Uint32(data[e:]), int(ne.Uint32(data[e+4:]))
		ksize, vsize := int(ne.Uint32(data[e+8:])), int(ne.Uint32(data[e+12:]))
		k := e + pos
		if flags&bucketLeafFlag != 0 || ksize == 0 || pos < 0 || ksize < 0 || vsize < 0 || k < e || k+ksize+vsize > end || k+ksize+vsize < k {
			continue
		}
		out = append(out, [2][]byte{data[k : k+ksize], data[k+ksize : k+ksize+vsize]})
	}
	return out
}

// newer reports whether record a is more recent than b.
func newer(a, b nodestate.NodeStatus) bool {
	if !a.LastSeen.Equal(b.LastSeen) {
		return a.LastSeen.After(b.LastSeen)
	}
	return a.Since.After(b.Since)
}

// Path returns the database's path.
func (s *Store) Path() string { return s.db.Path() }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Load returns every saved node state.
func (s *Store) Load() ([]nodestate.NodeStatus, error) {
	var out []nodestate.NodeStatus
	err := guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			return tx.Bucket(nodesBucket).ForEach(func(k, v []byte) error {
				n, err := nodestate.DecodeNode(k, v)
				if err != nil {
					return err
				}
				out = append(out, n)
				return nil
			})
		})
	})
	if err != nil {
		return nil, &DamagedError{Path: s.Path(), Why: err.Error()}
	}
	return out, nil
}

// Save writes the given nodes' states (replacing their previous ones) in one transaction.
func (s *Store) Save(nodes []nodestate.NodeStatus) error {
	if len(nodes) == 0 {
		return nil
	}
	// Encode outside the write transaction, and put in key order, which bbolt handles best.
	type kv struct{ k, v []byte }
	recs := make([]kv, len(nodes))
	buf := make([]byte, 0, 1024*len(nodes)) // one allocation for most flushes' records
	for i := range nodes {
		start := len(buf)
		var err error
		if buf, err = nodestate.AppendStatusJSON(buf, &nodes[i]); err != nil {
			return fmt.Errorf("state: node %s: %w", nodes[i].Name, err)
		}
		// Full slice expression: a later append that reallocates buf leaves this record alone.
		recs[i] = kv{[]byte(nodes[i].Name), buf[start:len(buf):len(buf)]}
	}
	slices.SortFunc(recs, func(a, b kv) int { return bytes.Compare(a.k, b.k) })
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(nodesBucket)
		for _, r := range recs {
			if err := b.Put(r.k, r.v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state %s: %w", s.Path(), err)
	}
	return nil
}

// Delete removes the named nodes' states.
func (s *Store) Delete(names []string) error {
	if len(names) == 0 {
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(nodesBucket)
		for _, n := range names {
			if err := b.Delete([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("state %s: %w", s.Path(), err)
	}
	return nil
}

// Store is the tracker's store on one server.
var _ nodestate.StateStore = (*Store)(nil)
