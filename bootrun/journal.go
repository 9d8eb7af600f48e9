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
	"time"

	"github.com/bootfabric/bootfabric/nodestate"
)

// JournalVersion is the format of the journals this package writes. Version 1 (no version in
// the header) held only the node records of power actions; version 2 adds every phase change,
// retry and server state seen, with its time, and the run's own events (start, pause, resume,
// abort, finish). Both are read; a newer version is refused by name.
const JournalVersion = 2

// Journal is a run's record on disk, one JSON line per change, synced after every batch of
// changes: kill the run at any moment and a rerun with it resumes where it stopped. Its lines
// are the header, node entries (JournalEntry) and run events (RunEvent).
type Journal struct {
	f    *os.File
	path string
	buf  bytes.Buffer
}

// journalHeader is the journal's first line: the run's nodes, so that a resume of other
// nodes is refused.
type journalHeader struct {
	Version int      `json:"version,omitempty"` // 0: version 1
	Nodes   []string `json:"nodes"`
}

// JournalEntry is one node's record after a change, with the server's boot attempt count when
// it was last powered (what a resumed run compares new attempts with).
type JournalEntry struct {
	Node     int        `json:"node"`
	Record   NodeRecord `json:"record"`
	Baseline int        `json:"baseline"`
	// Time is when the change was seen, At the same in seconds from the start of the process
	// that ran it (Record's times count from there too). Both are absent in version 1.
	Time time.Time `json:"time,omitzero"`
	At   float64   `json:"at,omitempty"`
	// Event says what changed (the Entry* words); absent in version 1, where every entry was a
	// power action's.
	Event string `json:"event,omitempty"`
	// Server is the node's boot as its servers showed it at the last poll: the state within
	// the attempt (discover, nbp, kernel, initrd...) that the run's coarser phase hides.
	Server *ServerSeen `json:"server,omitempty"`
}

// Words of JournalEntry.Event.
const (
	EntrySkipped = "skipped" // healthy before the run: never powered
	EntryPhase   = "phase"   // the node's run phase changed (powering, firmware, loading, booted, healthy)
	EntryRetry   = "retry"   // an attempt failed (the last of Record.Failures) and the node is queued again
	EntryFailed  = "failed"  // the run gave up on the node (Record.Class)
	EntryServer  = "server"  // only the servers' state of the node changed
)

// ServerSeen is a node's state on its boot servers.
type ServerSeen struct {
	State   nodestate.State `json:"state"`
	Attempt int             `json:"attempt"`
	Server  string          `json:"server,omitempty"`
	// Since is when the node entered State, in the run's seconds, as its server dated it (0:
	// unknown, as from a server without the date).
	Since float64 `json:"since,omitempty"`
}

// RunEvent is a line about the whole run: it started or was resumed, admission paused (the
// operator or the circuit breaker, Reason says which), resumed, aborted, or the run finished.
type RunEvent struct {
	Run    string    `json:"run"` // the Run* words
	Reason string    `json:"reason,omitempty"`
	Time   time.Time `json:"time"`
	At     float64   `json:"at"`
}

// Words of RunEvent.Run.
const (
	RunStarted  = "started"
	RunResumed  = "resumed" // a new process took the run over from its journal (--resume)
	RunPaused   = "paused"
	RunResume   = "resume" // admission resumed by the operator
	RunAbort    = "abort"
	RunFinished = "finished"
)

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
	line, _ := json.Marshal(journalHeader{Version: JournalVersion, Nodes: nodes})
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

// JournalContents is what a journal holds: the run's nodes, each one's last entry, and every
// line in order (what a calibration from past runs reads).
type JournalContents struct {
	Version int
	Nodes   []string
	Last    []*JournalEntry
	Entries []JournalEntry
	Events  []RunEvent
	whole   int64 // bytes of whole lines: the file less a torn last line
}

// Paused says why the run's admission is paused at the end of the journal, or "": the reason of
// the last pause not followed by a resume or a new process.
func (c *JournalContents) Paused() string {
	why := ""
	for _, e := range c.Events {
		switch e.Run {
		case RunPaused:
			why = e.Reason
		case RunResume, RunResumed, RunStarted:
			why = ""
		}
	}
	return why
}

// ReadJournal reads the journal at path. A last line cut short (the run killed while writing)
// is ignored; anything else damaged is an error naming the file and line.
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
		var err error
		if line == 1 {
			err = out.header(sc.Bytes())
		} else {
			err = out.line(sc.Bytes())
		}
		if err != nil {
			return nil, fmt.Errorf("journal %s:%d: %w", path, line, err)
		}
	}
	if out.Nodes == nil {
		return nil, fmt.Errorf("journal %s: empty", path)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	for k := range out.Entries {
		out.Last[out.Entries[k].Node] = &out.Entries[k]
	}
	return &out, nil
}

// header reads the journal's first line.
func (out *JournalContents) header(b []byte) error {
	var h journalHeader
	if err := json.Unmarshal(b, &h); err != nil || h.Nodes == nil {
		return errors.New("not a boot run journal")
	}
	if h.Version > JournalVersion || h.Version < 0 {
		return fmt.Errorf("format version %d; this bootctl reads versions 1 to %d: use a newer bootctl", h.Version, JournalVersion)
	}
	out.Version, out.Nodes, out.Last = max(h.Version, 1), h.Nodes, make([]*JournalEntry, len(h.Nodes))
	return nil
}

// line reads one line after the header: a run event or a node's entry.
func (out *JournalContents) line(b []byte) error {
	var probe struct {
		Run string `json:"run"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return err
	}
	if probe.Run != "" {
		var ev RunEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			return err
		}
		out.Events = append(out.Events, ev)
		return nil
	}
	var e JournalEntry
	if err := json.Unmarshal(b, &e); err != nil {
		return err
	}
	if e.Node < 0 || e.Node >= len(out.Nodes) || e.Record.Name != out.Nodes[e.Node] {
		return fmt.Errorf("node %d (%s) is not the run's", e.Node, e.Record.Name)
	}
	out.Entries = append(out.Entries, e)
	return nil
}

// AddEvent queues one run event.
func (j *Journal) AddEvent(e RunEvent) {
	line, _ := json.Marshal(e)
	j.buf.Write(append(line, '\n'))
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
