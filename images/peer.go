package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
)

// ErrBlobMismatch is wrapped when fetched bytes do not have the sha256 or the size asked for.
var ErrBlobMismatch = errors.New("blob does not match its sha256 and size")

// ErrBadSum is wrapped when a blob name is not 64 lower-case hex digits.
var ErrBadSum = errors.New("not a sha256 (64 lower-case hex digits)")

// BlobPathBySum returns the path of the blob named sum, for serving it to peers. It wraps
// ErrBadSum for a malformed name and ErrNotFound when the store has no such blob.
func (s *Store) BlobPathBySum(sum string) (string, error) {
	if !validHash(sum) {
		return "", fmt.Errorf("images: blob %q: %w", sum, ErrBadSum)
	}
	p := s.blobPath(sum)
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.Mode().IsRegular() {
		return "", fmt.Errorf("images: blob %s: %w", sum, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("images: blob %s: %w", sum, err)
	}
	return p, nil
}

// HasBlob reports whether the store holds the blob sum with the given size. It does not hash the
// file: blobs are written only after their hash was checked, and Verify re-reads them all.
func (s *Store) HasBlob(sum string, size int64) bool {
	if !validHash(sum) {
		return false
	}
	fi, err := os.Stat(s.blobPath(sum))
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

// FetchError is FetchBlob's failure: what each peer tried answered.
type FetchError struct {
	Sum   string
	Peers []error // one per peer tried, in order
}

func (e *FetchError) Error() string {
	if len(e.Peers) == 0 {
		return fmt.Sprintf("images: blob %s: no peer to fetch it from", e.Sum)
	}
	msgs := make([]string, len(e.Peers))
	for i, err := range e.Peers {
		msgs[i] = err.Error()
	}
	return fmt.Sprintf("images: blob %s: no peer gave it: %s", e.Sum, strings.Join(msgs, "; "))
}

// Unwrap returns the peers' errors, so that errors.Is finds ErrBlobMismatch among them.
func (e *FetchError) Unwrap() []error { return e.Peers }

// FetchBlob fetches the blob sum of size bytes into st from the first of peers (HTTP base URLs of
// boot servers) that has it: it streams each answer to a temporary file in the store, keeps it only
// when its sha256 and size are the ones asked for, and renames it into place. A peer that answers
// with other bytes is refused and the next one tried; the error names every peer and what it did.
// client nil is http.DefaultClient.
func FetchBlob(ctx context.Context, client *http.Client, peers []string, sum string, size int64, st *Store) error {
	if !validHash(sum) {
		return fmt.Errorf("images: blob %q: %w", sum, ErrBadSum)
	}
	if size < 0 {
		return fmt.Errorf("images: blob %s: negative size %d", sum, size)
	}
	if client == nil {
		client = http.DefaultClient
	}
	fe := &FetchError{Sum: sum}
	for _, peer := range peers {
		err := st.fetchFrom(ctx, client, peer, sum, size)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("images: blob %s from peer %s: %w", sum, peer, ctx.Err())
		}
		fe.Peers = append(fe.Peers, fmt.Errorf("peer %s: %w", peer, err))
	}
	return fe
}

// fetchFrom fetches one blob from one peer.
func (s *Store) fetchFrom(ctx context.Context, client *http.Client, peer, sum string, size int64) error {
	url := strings.TrimSuffix(peer, "/") + "/blobs/sha256/" + sum
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if resp.ContentLength >= 0 && resp.ContentLength != size {
		return fmt.Errorf("%w: it sends %d bytes, want %d (refused)", ErrBlobMismatch, resp.ContentLength, size)
	}
	return s.storeFetched(resp.Body, url, sum, size)
}

// storeFetched streams body (the answer of GET url) to a temporary file in the store and renames
// it to the blob sum once it has that sha256 and size; otherwise it removes it.
func (s *Store) storeFetched(body io.Reader, url, sum string, size int64) error {
	dir := filepath.Join(s.dir, blobDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".incoming-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	// One byte more than the size tells a longer answer from a whole one.
	got, n, err := writeHashed(tmp, io.LimitReader(body, size+1))
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	if got != sum || n != size {
		if n > size {
			return fmt.Errorf("%w: it sent more than %d bytes (refused)", ErrBlobMismatch, size)
		}
		return fmt.Errorf("%w: it sent sha256 %s and %d bytes, want %s and %d bytes (refused)", ErrBlobMismatch, got, n, sum, size)
	}
	return s.placeBlob(tmp.Name(), sum)
}

// ImportProfiles makes the given profiles (a fleet revision's manifests) servable from this store:
// it fetches every blob the store lacks with fetch (FetchBlob from the peers, typically), checks
// that each is then present, and only then records the profiles in the manifest, replacing those
// of the same names and keeping the others. A profile is never listed before all its files are
// here, so a server never serves a profile it cannot deliver; after an error the manifest is
// unchanged (blobs already fetched stay: they are verified and content-addressed).
func (s *Store) ImportProfiles(ctx context.Context, profiles []Profile, fetch func(ctx context.Context, sum string, size int64) error) error {
	if err := checkImports(profiles); err != nil {
		return err
	}
	if err := s.fetchMissing(ctx, profiles, fetch); err != nil {
		return err
	}
	return s.recordImports(profiles)
}

// checkImports checks that every profile is valid, named once, and names a well-formed blob for
// each of its files.
func checkImports(profiles []Profile) error {
	seen := map[string]bool{}
	for i, p := range profiles {
		if err := p.Validate(); err != nil {
			return fmt.Errorf("images: import: profiles[%d]: %w", i, err)
		}
		if seen[p.Name] {
			return fmt.Errorf("images: import: profiles[%d]: duplicate profile %q", i, p.Name)
		}
		seen[p.Name] = true
		for _, n := range p.FileNames() {
			b, ok := p.Files[n]
			if !ok {
				return fmt.Errorf("images: import: profile %q: file %q has no blob", p.Name, n)
			}
			if !validHash(b.SHA256) || b.Size < 0 {
				return fmt.Errorf("images: import: profile %q: file %q: bad blob %q (%d bytes)", p.Name, n, b.SHA256, b.Size)
			}
		}
	}
	return nil
}

// fetchMissing fetches, once each, the profiles' blobs the store lacks, and checks they are here
// after the fetch.
func (s *Store) fetchMissing(ctx context.Context, profiles []Profile, fetch func(ctx context.Context, sum string, size int64) error) error {
	fetched := map[string]bool{}
	for _, p := range profiles {
		for _, n := range p.FileNames() {
			b := p.Files[n]
			if fetched[b.SHA256] || s.HasBlob(b.SHA256, b.Size) {
				continue
			}
			if err := fetch(ctx, b.SHA256, b.Size); err != nil {
				return fmt.Errorf("images: import: profile %q: file %q: %w", p.Name, n, err)
			}
			if !s.HasBlob(b.SHA256, b.Size) {
				return fmt.Errorf("images: import: profile %q: file %q: blob %s (%d bytes) still missing after the fetch", p.Name, n, b.SHA256, b.Size)
			}
			fetched[b.SHA256] = true
		}
	}
	return nil
}

// recordImports writes the manifest with profiles added to the store's, replacing those of the
// same names; each keeps only its own files.
func (s *Store) recordImports(profiles []Profile) error {
	return s.update(func(next map[string]Profile) error {
		// Checked again under the store lock: a gc between the fetch and now removes unreferenced
		// blobs, and a profile must never be listed without its files.
		for _, p := range profiles {
			for _, n := range p.FileNames() {
				if b := p.Files[n]; !s.HasBlob(b.SHA256, b.Size) {
					return fmt.Errorf("images: import: profile %q: file %q: blob %s was removed (image gc?) before the profile was recorded", p.Name, n, b.SHA256)
				}
			}
		}
		for _, p := range profiles {
			p = cloneProfile(p)
			files := make(map[string]Blob, len(p.Files))
			for _, n := range p.FileNames() {
				files[n] = p.Files[n] // only the profile's own files
			}
			p.Files = files
			next[p.Name] = p
		}
		return nil
	})
}
