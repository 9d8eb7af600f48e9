package images

import (
	"fmt"
	"os"
	"path/filepath"
)

// Summary is a profile as a listing shows it: its fields, its total size, and the sizes a node
// fetches (kernel and initrd), which capacity planning uses.
type Summary struct {
	Name      string   `json:"name"`
	Kernel    string   `json:"kernel"`
	Initrd    string   `json:"initrd,omitempty"`
	Cmdline   string   `json:"cmdline,omitempty"`
	Root      string   `json:"root,omitempty"`
	BootFiles []string `json:"boot_files,omitempty"`
	Bytes     int64    `json:"bytes"`
	// KernelBytes and InitrdBytes are what a node fetches, the sizes plan --profile uses.
	KernelBytes int64 `json:"kernel_bytes"`
	InitrdBytes int64 `json:"initrd_bytes"`
	// RootBytes is the root image a node's agent fetches through the fabric (peer delivery).
	RootBytes int64           `json:"root_bytes,omitempty"`
	Files     map[string]Blob `json:"files"`
}

// Summarize is p's summary; p comes from a store, which filled its Files.
func (p Profile) Summarize() Summary {
	s := Summary{Name: p.Name, Kernel: p.Kernel, Initrd: p.Initrd, Cmdline: p.Cmdline, Root: p.Root, BootFiles: p.BootFiles, Files: p.Files,
		KernelBytes: p.Files[p.Kernel].Size, InitrdBytes: p.Files[p.Initrd].Size, RootBytes: p.Files[p.Root].Size}
	for _, b := range p.Files {
		s.Bytes += b.Size
	}
	return s
}

// FileArgError is a file given for a profile that cannot be one: Role is kernel, initrd or
// boot-file. It prints as "ROLE: what is wrong", or "ROLE PATH: ..." for a clash of names.
type FileArgError struct {
	Role, Path string
	Err        error
	Clash      bool // another file of the profile has the same name
}

func (e *FileArgError) Error() string {
	if e.Clash {
		return fmt.Sprintf("%s %s: %v", e.Role, e.Path, e.Err)
	}
	return e.Role + ": " + e.Err.Error()
}

func (e *FileArgError) Unwrap() error { return e.Err }

// ProfileFromFiles is the profile of the files at the paths given (initrd optional), named by
// their base names, with the map from those names to the paths that Store.Add takes. Each path
// must be a regular file, and no two may share a base name.
func ProfileFromFiles(name, cmdline, kernel, initrd string, bootFiles []string) (Profile, map[string]string, error) {
	files := map[string]string{}
	p := Profile{Name: name, Cmdline: cmdline}
	var err error
	if p.Kernel, err = addFile(files, "kernel", kernel); err != nil {
		return p, nil, err
	}
	if initrd != "" {
		if p.Initrd, err = addFile(files, "initrd", initrd); err != nil {
			return p, nil, err
		}
	}
	for _, f := range bootFiles {
		n, err := addFile(files, "boot-file", f)
		if err != nil {
			return p, nil, err
		}
		p.BootFiles = append(p.BootFiles, n)
	}
	return p, files, nil
}

// addFile checks that path is a regular file whose name no other file of the profile has, and
// returns that name.
func addFile(files map[string]string, role, path string) (string, error) {
	if fi, err := os.Stat(path); err != nil {
		return "", &FileArgError{Role: role, Path: path, Err: err}
	} else if !fi.Mode().IsRegular() {
		return "", &FileArgError{Role: role, Path: path, Err: fmt.Errorf("%s is not a regular file", path)}
	}
	base := filepath.Base(path)
	if prev, dup := files[base]; dup && prev != path {
		return "", &FileArgError{Role: role, Path: path, Clash: true,
			Err: fmt.Errorf("a file named %s is already given (%s); names must differ", base, prev)}
	}
	files[base] = path
	return base, nil
}
