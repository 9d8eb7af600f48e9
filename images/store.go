package images

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/bootfabric/bootfabric/internal/atomicfile"
)

const (
	manifestName    = "manifest.json"
	blobDir         = "blobs/sha256"
	manifestVersion = 1
)

// ErrNotFound is wrapped when a profile does not exist.
var ErrNotFound = errors.New("not found")

// manifest is the on-disk form of the store.
type manifest struct {
	Version  int       `json:"version"`
	Profiles []Profile `json:"profiles"` // sorted by name
}

// Store is a directory of profiles and blobs. Its methods are safe for
// concurrent use within one process.
type Store struct {
	dir string

	mu       sync.RWMutex
	profiles map[string]Profile
	stamp    fileStamp // of the manifest profiles were read from or written to
	// follow, when set (Follow), makes every read check the manifest on disk first and is told
	// what changed.
	follow func(Change, error)
}

// ErrNoStore is wrapped when Open finds no store directory.
var ErrNoStore = errors.New("no image store")

// Open opens the existing store in dir; an empty directory is an empty store. A missing directory
// is an error wrapping ErrNoStore, never a silent new store: a mistyped path must not read as "no
// profiles" (Create makes a store).
func Open(dir string) (*Store, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("images: %w at %s (bootctl image add --store %s creates one)", ErrNoStore, dir, dir)
	}
	if err != nil {
		return nil, fmt.Errorf("images: store %s: %w", dir, err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("images: store %s: %w: not a directory", dir, ErrNoStore)
	}
	return open(dir)
}

// Create opens the store in dir, creating the directory when it is missing.
func Create(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("images: creating store %s: %w", dir, err)
	}
	return open(dir)
}

func open(dir string) (*Store, error) {
	profiles, stamp, err := readManifest(dir)
	if err != nil {
		return nil, err
	}
	return &Store{dir: dir, profiles: profiles, stamp: stamp}, nil
}

// readManifest reads and checks the manifest of the store in dir (none: no profiles) and returns
// its profiles with the stamp of the very file it read.
func readManifest(dir string) (map[string]Profile, fileStamp, error) {
	profiles := map[string]Profile{}
	path := filepath.Join(dir, manifestName)
	b, stamp, err := readStamped(path)
	if errors.Is(err, fs.ErrNotExist) {
		return profiles, fileStamp{}, nil
	}
	if err != nil {
		return nil, fileStamp{}, fmt.Errorf("images: reading %s: %w", path, err)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fileStamp{}, fmt.Errorf("images: parsing %s: %w", path, err)
	}
	if m.Version != manifestVersion {
		return nil, fileStamp{}, fmt.Errorf("images: %s: manifest version %d, this program reads %d", path, m.Version, manifestVersion)
	}
	for i, p := range m.Profiles {
		if err := checkManifestProfile(p); err != nil {
			return nil, fileStamp{}, fmt.Errorf("images: %s: profiles[%d]: %w", path, i, err)
		}
		if _, dup := profiles[p.Name]; dup {
			return nil, fileStamp{}, fmt.Errorf("images: %s: profiles[%d]: duplicate profile %q", path, i, p.Name)
		}
		profiles[p.Name] = p
	}
	return profiles, stamp, nil
}

// checkManifestProfile checks a profile as the manifest records it: valid, with a well-formed
// blob for each of its files.
func checkManifestProfile(p Profile) error {
	if err := p.Validate(); err != nil {
		return err
	}
	for _, n := range p.FileNames() {
		bl, ok := p.Files[n]
		if !ok {
			return fmt.Errorf("profile %q: file %q has no blob", p.Name, n)
		}
		if !validHash(bl.SHA256) {
			return fmt.Errorf("profile %q: file %q: bad sha256 %q", p.Name, n, bl.SHA256)
		}
	}
	return nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Add stores the profile's files and records the profile, replacing any
// profile of the same name. files maps each file name of the profile
// (Kernel, Initrd, BootFiles) to a path on disk; names the profile does not
// use are an error. Files with equal contents share one blob.
func (s *Store) Add(p Profile, files map[string]string) (Profile, error) {
	return s.add(p, files, false)
}

func (s *Store) add(p Profile, files map[string]string, move bool) (Profile, error) {
	if err := p.Validate(); err != nil {
		return Profile{}, fmt.Errorf("images: add: %w", err)
	}
	names := p.FileNames()
	for n := range files {
		if !slices.Contains(names, n) {
			return Profile{}, fmt.Errorf("images: add %q: file %q is not the kernel, initrd or a boot file of the profile", p.Name, n)
		}
	}
	p.BootFiles = slices.Clone(p.BootFiles)
	p.Files = map[string]Blob{}
	// The store lock is held from the first blob to the manifest, so that a gc in another process
	// never sees these blobs unreferenced.
	unlock, err := s.lock()
	if err != nil {
		return Profile{}, err
	}
	defer unlock()
	for _, n := range names {
		src, ok := files[n]
		if !ok {
			return Profile{}, fmt.Errorf("images: add %q: no source given for file %q", p.Name, n)
		}
		b, err := s.putFile(src, move)
		if err != nil {
			return Profile{}, fmt.Errorf("images: add %q: file %q: %w", p.Name, n, err)
		}
		p.Files[n] = b
	}
	err = s.updateLocked(func(next map[string]Profile) error {
		next[p.Name] = p
		return nil
	})
	if err != nil {
		return Profile{}, err
	}
	return cloneProfile(p), nil
}

// StageFile creates an empty file in the store's staging area, for a caller that writes a
// large file (an imported initramfs) once and hands it to AddStaged, which moves it into place
// instead of copying it. The caller removes the file if it never reaches AddStaged.
func (s *Store) StageFile() (*os.File, error) {
	if err := os.MkdirAll(filepath.Join(s.dir, blobDir), 0o755); err != nil {
		return nil, fmt.Errorf("images: %w", err)
	}
	f, err := os.CreateTemp(filepath.Join(s.dir, blobDir), ".incoming-*")
	if err != nil {
		return nil, fmt.Errorf("images: staging a file: %w", err)
	}
	return f, nil
}

// AddStaged is Add for files written with StageFile (closed by the caller): each is hashed
// and moved into its blob rather than copied. Files given by other paths are copied as Add does.
func (s *Store) AddStaged(p Profile, files map[string]string) (Profile, error) {
	return s.add(p, files, true)
}

// putFile copies src into a blob named by its sha256; a staged file (StageFile) is moved when
// move is set.
func (s *Store) putFile(src string, move bool) (Blob, error) {
	if move && filepath.Dir(src) == filepath.Join(s.dir, blobDir) && strings.HasPrefix(filepath.Base(src), ".incoming-") {
		return s.moveStaged(src)
	}
	return s.copyFile(src)
}

// moveStaged hashes a staged file and renames it into its blob.
func (s *Store) moveStaged(src string) (Blob, error) {
	f, err := os.Open(src)
	if err != nil {
		return Blob{}, err
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	f.Close()
	if err != nil {
		return Blob{}, fmt.Errorf("hashing %s: %w", src, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err := s.placeBlob(src, sum); err != nil {
		return Blob{}, err
	}
	return Blob{SHA256: sum, Size: n}, nil
}

// copyFile copies src into a blob named by its sha256.
func (s *Store) copyFile(src string) (Blob, error) {
	in, err := os.Open(src)
	if err != nil {
		return Blob{}, err
	}
	defer in.Close()
	fi, err := in.Stat()
	if err != nil {
		return Blob{}, err
	}
	if !fi.Mode().IsRegular() {
		return Blob{}, fmt.Errorf("%s is not a regular file", src)
	}
	if err := os.MkdirAll(filepath.Join(s.dir, blobDir), 0o755); err != nil {
		return Blob{}, fmt.Errorf("images: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Join(s.dir, blobDir), ".incoming-*")
	if err != nil {
		return Blob{}, err
	}
	defer os.Remove(tmp.Name()) // no-op after a successful rename
	sum, n, err := writeHashed(tmp, in)
	if err != nil {
		return Blob{}, fmt.Errorf("copying %s into the store: %w", src, err)
	}
	// Rename even when the blob exists: the fresh copy was just hashed, so
	// adding a file again repairs a blob that Verify found changed.
	if err := s.placeBlob(tmp.Name(), sum); err != nil {
		return Blob{}, err
	}
	return Blob{SHA256: sum, Size: n}, nil
}

// placeBlob makes the written and hashed file tmp the blob sum, read-only.
func (s *Store) placeBlob(tmp, sum string) error {
	if err := os.Chmod(tmp, 0o444); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.blobPath(sum)); err != nil {
		return fmt.Errorf("storing blob %s: %w", sum, err)
	}
	return nil
}

// writeHashed copies r to f, syncs and closes f, and returns the sha256 (in hex) and the size of
// what it copied.
func writeHashed(f *os.File, r io.Reader) (string, int64, error) {
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return hex.EncodeToString(h.Sum(nil)), n, err
}

func (s *Store) writeManifest(profiles map[string]Profile) error {
	m := manifest{Version: manifestVersion, Profiles: sortedProfiles(profiles)}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("images: encoding manifest: %w", err)
	}
	b = append(b, '\n')
	if err := atomicfile.WriteFile(filepath.Join(s.dir, manifestName), b, 0o644); err != nil {
		return fmt.Errorf("images: writing manifest in %s: %w", s.dir, err)
	}
	return nil
}

// List returns all profiles sorted by name.
func (s *Store) List() []Profile {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := sortedProfiles(s.profiles)
	for i := range out {
		out[i] = cloneProfile(out[i])
	}
	return out
}

// Get returns the named profile, or an error wrapping ErrNotFound.
func (s *Store) Get(name string) (Profile, error) {
	s.sync()
	s.mu.RLock()
	defer s.mu.RUnlock()
	p, ok := s.profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("images: profile %q: %w", name, ErrNotFound)
	}
	return cloneProfile(p), nil
}

// BlobPath returns the on-disk path of a profile's file, for callers that
// serve it themselves (e.g. with http.ServeContent).
func (s *Store) BlobPath(profile, file string) (string, error) {
	p, err := s.Get(profile)
	if err != nil {
		return "", err
	}
	b, ok := p.Files[file]
	if !ok {
		return "", fmt.Errorf("images: profile %q has no file %q: %w", profile, file, ErrNotFound)
	}
	return s.blobPath(b.SHA256), nil
}

func (s *Store) blobPath(sum string) string { return filepath.Join(s.dir, blobDir, sum) }

// Problem is one inconsistency found by Verify.
type Problem struct {
	Profile string `json:"profile"`
	File    string `json:"file"`
	Blob    Blob   `json:"blob"` // what the manifest records
	Kind    string `json:"kind"` // "missing", "changed" (sha256 or size differs) or "unreadable"
	Detail  string `json:"detail"`
}

func (p Problem) String() string {
	return fmt.Sprintf("profile %q file %q (blob %s): %s: %s", p.Profile, p.File, p.Blob.SHA256, p.Kind, p.Detail)
}

// Verify re-reads every blob the manifest names and reports each profile
// file whose blob is missing, unreadable or changed, sorted by profile and
// file. Each blob is hashed once however many profiles share it.
func (s *Store) Verify() []Problem {
	profiles := s.List()
	type check struct{ kind, detail string }
	checked := map[string]check{}
	var out []Problem
	for _, p := range profiles {
		files := p.FileNames()
		sort.Strings(files)
		for _, f := range files {
			b := p.Files[f]
			c, ok := checked[b.SHA256]
			if !ok {
				c.kind, c.detail = s.checkBlob(b)
				checked[b.SHA256] = c
			}
			if c.kind != "" {
				out = append(out, Problem{Profile: p.Name, File: f, Blob: b, Kind: c.kind, Detail: c.detail})
			}
		}
	}
	return out
}

func (s *Store) checkBlob(b Blob) (kind, detail string) {
	path := s.blobPath(b.SHA256)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "missing", path + " does not exist"
	}
	if err != nil {
		return "unreadable", err.Error()
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "unreadable", err.Error()
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != b.SHA256 || n != b.Size {
		return "changed", fmt.Sprintf("%s has sha256 %s and %d bytes, manifest says %s and %d bytes", path, got, n, b.SHA256, b.Size)
	}
	return "", ""
}

func sortedProfiles(m map[string]Profile) []Profile {
	out := make([]Profile, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func cloneProfile(p Profile) Profile {
	p.BootFiles = slices.Clone(p.BootFiles)
	files := make(map[string]Blob, len(p.Files))
	for k, v := range p.Files {
		files[k] = v
	}
	p.Files = files
	return p
}

func validHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
