package images

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"syscall"
	"time"
)

// lockName is the file every writer of a store locks (flock) while it changes the manifest or
// removes blobs, so that two processes' read-modify-write of the manifest never lose a profile
// and a gc never removes a blob an add is about to record.
const lockName = ".lock"

// fileStamp identifies one version of the manifest: it is replaced by rename, so a new version
// is a new inode; size and modification time catch an edit in place.
type fileStamp struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func stampOf(fi fs.FileInfo) fileStamp {
	st := fileStamp{size: fi.Size(), mtime: fi.ModTime()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.dev, st.ino = uint64(sys.Dev), sys.Ino
	}
	return st
}

// readStamped reads a file and returns the stamp of the very file it read (fstat of the open
// descriptor), so that a rename between a stat and a read cannot pair one version's stamp with
// another's contents.
func readStamped(path string) ([]byte, fileStamp, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fileStamp{}, err
	}
	b, err := io.ReadAll(f)
	return b, stampOf(fi), err
}

// manifestStamp is the stamp of the manifest on disk now; the zero stamp when there is none.
func (s *Store) manifestStamp() (fileStamp, error) {
	fi, err := os.Stat(filepath.Join(s.dir, manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return fileStamp{}, nil
	}
	if err != nil {
		return fileStamp{}, err
	}
	return stampOf(fi), nil
}

// Change is what a store found changed in its manifest since it last read it: profile names,
// sorted.
type Change struct {
	Added    []string `json:"added,omitempty"`
	Replaced []string `json:"replaced,omitempty"` // same name, other files or command line
	Removed  []string `json:"removed,omitempty"`
}

// Empty reports whether nothing changed.
func (c Change) Empty() bool { return len(c.Added)+len(c.Replaced)+len(c.Removed) == 0 }

func diffProfiles(old, cur map[string]Profile) Change {
	var c Change
	for n, p := range cur {
		o, ok := old[n]
		switch {
		case !ok:
			c.Added = append(c.Added, n)
		case !sameProfile(o, p):
			c.Replaced = append(c.Replaced, n)
		}
	}
	for n := range old {
		if _, ok := cur[n]; !ok {
			c.Removed = append(c.Removed, n)
		}
	}
	sort.Strings(c.Added)
	sort.Strings(c.Replaced)
	sort.Strings(c.Removed)
	return c
}

func sameProfile(a, b Profile) bool {
	return a.Kernel == b.Kernel && a.Initrd == b.Initrd && a.Root == b.Root && a.Cmdline == b.Cmdline &&
		slices.Equal(a.BootFiles, b.BootFiles) && maps.Equal(a.Files, b.Files)
}

// Follow makes the store follow its manifest on disk: every read (Get, List, BlobPath, the
// served FS) first compares the manifest's stamp (one stat) with the one it read, and reads it
// again when another process (bootctl image add, import, delete) replaced it, so that a running
// server serves a replaced profile from the next request on. notify, if not nil, is called after
// each re-read with what changed, or with the error that kept the previous profiles (a manifest
// that does not parse is never half applied). Blobs are content-addressed and never rewritten, so
// a transfer already under way keeps its file.
func (s *Store) Follow(notify func(Change, error)) {
	if notify == nil {
		notify = func(Change, error) {}
	}
	s.mu.Lock()
	s.follow = notify
	s.mu.Unlock()
}

// sync re-reads the manifest when the store follows it and it changed on disk.
func (s *Store) sync() {
	s.mu.RLock()
	notify, seen := s.follow, s.stamp
	s.mu.RUnlock()
	if notify == nil {
		return
	}
	if now, err := s.manifestStamp(); err == nil && now == seen {
		return
	}
	if c, err := s.Refresh(); err != nil || !c.Empty() {
		notify(c, err)
	}
}

// Refresh reads the manifest again if it changed on disk since the store last read or wrote it,
// and returns what changed. On an error the store keeps its profiles, and does not read that
// version of the manifest again.
func (s *Store) Refresh() (Change, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now, err := s.manifestStamp()
	if err != nil {
		return Change{}, fmt.Errorf("images: %w", err)
	}
	if now == s.stamp {
		return Change{}, nil
	}
	profiles, stamp, err := readManifest(s.dir)
	if err != nil {
		s.stamp = now
		return Change{}, err
	}
	c := diffProfiles(s.profiles, profiles)
	s.profiles, s.stamp = profiles, stamp
	return c, nil
}

// lock takes the store's inter-process lock; the returned function releases it.
func (s *Store) lock() (func(), error) {
	f, err := os.OpenFile(filepath.Join(s.dir, lockName), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("images: locking store %s: %w", s.dir, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("images: locking store %s: %w", s.dir, err)
	}
	return func() { f.Close() }, nil // closing the descriptor releases the lock
}

// update changes the manifest under the store lock: edit gets the profiles as they are on disk
// now (another process may have added some since this store read them) and changes them in place.
func (s *Store) update(edit func(map[string]Profile) error) error {
	unlock, err := s.lock()
	if err != nil {
		return err
	}
	defer unlock()
	return s.updateLocked(edit)
}

// updateLocked is update for a caller that holds the store lock.
func (s *Store) updateLocked(edit func(map[string]Profile) error) error {
	cur, _, err := readManifest(s.dir)
	if err != nil {
		return err
	}
	next := maps.Clone(cur)
	if err := edit(next); err != nil {
		return err
	}
	c, notify, err := s.install(next)
	if err == nil && notify != nil && !c.Empty() {
		notify(c, nil) // outside s.mu: a notified logger may read the store
	}
	return err
}

// install writes profiles as the manifest and makes them the store's, returning what changed
// and whom to tell.
func (s *Store) install(profiles map[string]Profile) (Change, func(Change, error), error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.writeManifest(profiles); err != nil {
		return Change{}, nil, err
	}
	stamp, err := s.manifestStamp()
	if err != nil {
		return Change{}, nil, fmt.Errorf("images: %w", err)
	}
	c := diffProfiles(s.profiles, profiles)
	s.profiles, s.stamp = profiles, stamp
	return c, s.follow, nil
}

// Delete removes a profile from the manifest and returns it. Its blobs stay until GC, so that a
// transfer under way, or another profile sharing them, keeps them.
func (s *Store) Delete(name string) (Profile, error) {
	var gone Profile
	err := s.update(func(next map[string]Profile) error {
		p, ok := next[name]
		if !ok {
			return fmt.Errorf("images: profile %q: %w", name, ErrNotFound)
		}
		gone = p
		delete(next, name)
		return nil
	})
	if err != nil {
		return Profile{}, err
	}
	return cloneProfile(gone), nil
}

// GCResult is what GC removed, or would remove.
type GCResult struct {
	DryRun  bool   `json:"dry_run"`
	Removed []Blob `json:"removed"` // sorted by sha256
	Bytes   int64  `json:"bytes"`   // freed, or that would be
	Kept    int    `json:"kept"`    // blobs some profile references
}

// GC removes the blobs no profile of the manifest references (with dryRun, only lists them). It
// holds the store lock, so an add or import in another process either recorded its profile
// before GC read the manifest or places its blobs after GC is done. Staged files (an import
// under way) are not blobs and are left alone.
func (s *Store) GC(dryRun bool) (GCResult, error) {
	res := GCResult{DryRun: dryRun, Removed: []Blob{}}
	unlock, err := s.lock()
	if err != nil {
		return res, err
	}
	defer unlock()
	profiles, _, err := readManifest(s.dir)
	if err != nil {
		return res, err
	}
	used := map[string]bool{}
	for _, p := range profiles {
		for _, b := range p.Files {
			used[b.SHA256] = true
		}
	}
	ents, err := os.ReadDir(filepath.Join(s.dir, blobDir))
	if errors.Is(err, fs.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("images: gc: %w", err)
	}
	for _, e := range ents {
		sum := e.Name()
		if !validHash(sum) || !e.Type().IsRegular() {
			continue
		}
		if used[sum] {
			res.Kept++
			continue
		}
		fi, err := e.Info()
		if err != nil {
			return res, fmt.Errorf("images: gc: %w", err)
		}
		if !dryRun {
			if err := os.Remove(s.blobPath(sum)); err != nil {
				return res, fmt.Errorf("images: gc: removing blob %s: %w", sum, err)
			}
		}
		res.Removed = append(res.Removed, Blob{SHA256: sum, Size: fi.Size()})
		res.Bytes += fi.Size()
	}
	return res, nil
}
