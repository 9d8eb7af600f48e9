package bootrun

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// Journal is a run's record on disk, one JSON line per change, synced after every batch of
// changes: kill the run at any moment and a rerun with it resumes where it stopped.
type Journal struct {
	f    *os.File
	path string
	buf  bytes.Buffer
}

// journalHeader is the journal's first line: the run's nodes, so that a resume of other
// nodes is refused.
type journalHeader struct {
	Nodes []string `json:"nodes"`
}

// JournalEntry is one node's record after a change, with the server's boot attempt count when
// it was last powered (what a resumed run compares new attempts with).
type JournalEntry struct {
	Node     int        `json:"node"`
	Record   NodeRecord `json:"record"`
	Baseline int        `json:"baseline"`
}

// CreateJournal starts a new journal at path for nodes; an existing file is refused (resume it,
// or remove it).
func CreateJournal(path string, nodes []string) (*Journal, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("journal %s: exists: resume its run with --resume, or remove it", path)
		}
		return nil, fmt.Errorf("journal: %w", err)
	}
	j := &Journal{f: f, path: path}
	line, _ := json.Marshal(journalHeader{Nodes: nodes})
	j.buf.Write(append(line, '\n'))
	return j, j.Sync()
}

// ResumeJournal opens the journal at path of a run of the same nodes and returns each node's
// last entry (nil for nodes it never recorded). A last line cut short (the run killed while
// writing it) is cut off the file before anything is appended, so that the next entry starts a
// line of its own.
func ResumeJournal(path string, nodes []string) (*Journal, []*JournalEntry, error) {
	entries, err := ReadJournal(path)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(entries.Nodes, nodes) {
		return nil, nil, fmt.Errorf("journal %s: a run of %d other nodes; give the same NODES, or start a new journal", path, len(entries.Nodes))
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("journal: %w", err)
	}
	if fi, err := f.Stat(); err != nil || fi.Size() > entries.whole {
		if err == nil {
			err = f.Truncate(entries.whole)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			f.Close()
			return nil, nil, fmt.Errorf("journal %s: cutting its torn last line: %w", path, err)
		}
	}
	return &Journal{f: f, path: path}, entries.Last, nil
}

// JournalContents is what a journal holds: the run's nodes and each one's last entry.
type JournalContents struct {
	Nodes []string
	Last  []*JournalEntry
	whole int64 // bytes of whole lines: the file less a torn last line
}

// ReadJournal reads the journal at path. A last line cut short (the run killed while writing)
// is ignored; anything else damaged is an error naming the line.
func ReadJournal(path string) (*JournalContents, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i+1 < len(data) {
		data = data[:i+1] // a torn last write
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	out := JournalContents{whole: int64(len(data))}
	for line := 1; sc.Scan(); line++ {
		if line == 1 {
			var h journalHeader
			if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Nodes == nil {
				return nil, fmt.Errorf("journal %s:1: not a boot run journal", path)
			}
			out.Nodes, out.Last = h.Nodes, make([]*JournalEntry, len(h.Nodes))
			continue
		}
		var e JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("journal %s:%d: %w", path, line, err)
		}
		if e.Node < 0 || e.Node >= len(out.Nodes) || e.Record.Name != out.Nodes[e.Node] {
			return nil, fmt.Errorf("journal %s:%d: node %d (%s) is not the run's", path, line, e.Node, e.Record.Name)
		}
		out.Last[e.Node] = &e
	}
	if out.Nodes == nil {
		return nil, fmt.Errorf("journal %s: empty", path)
	}
	return &out, sc.Err()
}

// Add queues one entry; Sync writes and syncs what is queued.
func (j *Journal) Add(e JournalEntry) {
	line, _ := json.Marshal(e) // a NodeRecord always encodes
	j.buf.Write(append(line, '\n'))
}

// Sync writes the queued entries and syncs the file.
func (j *Journal) Sync() error {
	if j.buf.Len() == 0 {
		return nil
	}
	if _, err := io.Copy(j.f, &j.buf); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal %s: %w", j.path, err)
	}
	return nil
}

// Close syncs and closes the journal.
func (j *Journal) Close() error {
	return errors.Join(j.Sync(), j.f.Close())
}
