package images

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// ProfileNames lists the names of the store's profiles, sorted: what a message about a name the
// store lacks offers instead.
func (s *Store) ProfileNames() []string {
	var names []string
	for _, p := range s.List() {
		names = append(names, p.Name)
	}
	return names
}

// WriteProfileTable writes profiles as bootctl image list shows them: one row each, sizes in MB.
func WriteProfileTable(w io.Writer, list []Profile) error {
	if len(list) == 0 {
		_, err := fmt.Fprintln(w, "no profiles")
		return err
	}
	t := texttable.New(w)
	t.Row("profile", "kernel", "kernel MB", "initrd", "initrd MB", "files", "MB", "sha256 (kernel)", "cmdline")
	for _, p := range list {
		s := p.Summarize()
		initrdMB := "-"
		if p.Initrd != "" {
			initrdMB = texttable.Float(float64(s.InitrdBytes)/1e6, 1)
		}
		t.Row(p.Name, p.Kernel, texttable.Float(float64(s.KernelBytes)/1e6, 1), texttable.OrDash(p.Initrd), initrdMB, len(p.FileNames()),
			texttable.Float(float64(s.Bytes)/1e6, 1), p.Files[p.Kernel].SHA256[:12], texttable.OrDash(p.Cmdline))
	}
	return t.Flush()
}

// ProfilesCSV is profiles as CSV records, the header first.
func ProfilesCSV(list []Profile) [][]string {
	rows := [][]string{{"profile", "kernel", "initrd", "files", "bytes", "kernel_sha256", "cmdline", "kernel_bytes", "initrd_bytes"}}
	for _, p := range list {
		s := p.Summarize()
		rows = append(rows, []string{p.Name, p.Kernel, p.Initrd, strconv.Itoa(len(p.FileNames())),
			strconv.FormatInt(s.Bytes, 10), p.Files[p.Kernel].SHA256, p.Cmdline,
			strconv.FormatInt(s.KernelBytes, 10), strconv.FormatInt(s.InitrdBytes, 10)})
	}
	return rows
}

// VerifyReport is what Verify found, as bootctl image verify reports it.
type VerifyReport struct {
	Files    int             `json:"files"`
	OK       bool            `json:"ok"`
	Problems []VerifyProblem `json:"problems"`
}

// VerifyProblem is one file found missing, unreadable or changed.
type VerifyProblem struct {
	Profile string `json:"profile"`
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail"`
}

// VerifyAll re-hashes every stored file (Verify) and counts the files of the profiles.
func (s *Store) VerifyAll() *VerifyReport {
	problems := s.Verify()
	r := &VerifyReport{OK: len(problems) == 0, Problems: []VerifyProblem{}}
	for _, p := range s.List() {
		r.Files += len(p.FileNames())
	}
	for _, p := range problems {
		r.Problems = append(r.Problems, VerifyProblem{p.Profile, p.File, p.Blob.SHA256, p.Kind, p.Detail})
	}
	return r
}

// WriteText writes one line per problem and a count.
func (r *VerifyReport) WriteText(w io.Writer) error {
	for _, p := range r.Problems {
		fmt.Fprintln(w, Problem{Profile: p.Profile, File: p.File, Blob: Blob{SHA256: p.SHA256}, Kind: p.Kind, Detail: p.Detail}.String())
	}
	_, err := fmt.Fprintf(w, "%d files checked, %d problems\n", r.Files, len(r.Problems))
	return err
}

// WriteText writes what GC removed (or would), the largest blob first, and what it kept.
func (r GCResult) WriteText(w io.Writer) error {
	verb := "removed"
	if r.DryRun {
		verb = "would remove"
	}
	removed := slices.Clone(r.Removed)
	slices.SortFunc(removed, func(a, b Blob) int { return cmp.Compare(b.Size, a.Size) })
	for _, b := range removed {
		fmt.Fprintf(w, "%s blob %s (%s MB)\n", verb, b.SHA256, texttable.Float(float64(b.Size)/1e6, 1))
	}
	_, err := fmt.Fprintf(w, "%s %d blobs, %s MB; %d blobs referenced by profiles kept\n", verb, len(r.Removed), texttable.Float(float64(r.Bytes)/1e6, 1), r.Kept)
	return err
}
