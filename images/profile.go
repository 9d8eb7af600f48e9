package images

import (
	"errors"
	"fmt"
	"strings"
)

// Profile is a bootable image: what iPXE loads over HTTP and what TFTP and
// HTTP serve under boot/{Name}/.
type Profile struct {
	Name    string `json:"name"`              // [a-z0-9][a-z0-9._-]*, at most 63 bytes
	Kernel  string `json:"kernel"`            // file name, required
	Initrd  string `json:"initrd,omitempty"`  // file name, optional
	Cmdline string `json:"cmdline,omitempty"` // kernel command line, one line
	// Root, when set, is the node's root image, which the agent of the initrd fetches from its
	// peers and the server (peer delivery) rather than iPXE from the server: iPXE loads only the
	// small kernel and initrd, and the script tells the agent where the root is (RenderScript).
	Root      string   `json:"root,omitempty"`
	BootFiles []string `json:"boot_files,omitempty"` // further file names served with the profile

	// Files maps every file name above to its blob. The store fills it;
	// it is ignored in the profile given to Add.
	Files map[string]Blob `json:"files"`
}

// Blob identifies file contents.
type Blob struct {
	SHA256 string `json:"sha256"` // lower-case hex
	Size   int64  `json:"size"`
}

// FileNames returns the profile's file names: kernel, initrd, root, then
// boot files, each once.
func (p Profile) FileNames() []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range append([]string{p.Kernel, p.Initrd, p.Root}, p.BootFiles...) {
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid profile")

// Validate checks names and the command line. Names become URL path
// elements and iPXE script words, so they are kept to a safe alphabet.
func (p Profile) Validate() error {
	if err := checkName("name", p.Name, false); err != nil {
		return err
	}
	if p.Kernel == "" {
		return fmt.Errorf("%w %q: kernel is required", ErrInvalid, p.Name)
	}
	if err := checkName("kernel", p.Kernel, true); err != nil {
		return fmt.Errorf("profile %q: %w", p.Name, err)
	}
	if p.Initrd != "" {
		if err := checkName("initrd", p.Initrd, true); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
	}
	if p.Root != "" {
		if err := checkName("root", p.Root, true); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
		if p.Initrd == "" {
			return fmt.Errorf("%w %q: a root image needs an initrd, whose agent fetches it", ErrInvalid, p.Name)
		}
	}
	for i, b := range p.BootFiles {
		if err := checkName(fmt.Sprintf("boot_files[%d]", i), b, true); err != nil {
			return fmt.Errorf("profile %q: %w", p.Name, err)
		}
	}
	for i, r := range p.Cmdline {
		// A newline would end the iPXE "kernel" line and start a command.
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("%w %q: cmdline has control character %U at byte %d", ErrInvalid, p.Name, r, i)
		}
	}
	if len(p.Cmdline) > 4096 {
		return fmt.Errorf("%w %q: cmdline is %d bytes, limit 4096", ErrInvalid, p.Name, len(p.Cmdline))
	}
	return nil
}

// checkName accepts [A-Za-z0-9._-] (file names) or [a-z0-9._-] (profile
// names), starting with a letter or digit, at most 63 (profiles) or 255
// (files) bytes.
func checkName(field, s string, file bool) error {
	limit := 63
	if file {
		limit = 255
	}
	if s == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	}
	if len(s) > limit {
		return fmt.Errorf("%w: %s %q is %d bytes, limit %d", ErrInvalid, field, s, len(s), limit)
	}
	for i, r := range s {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (file && r >= 'A' && r <= 'Z') ||
			(i > 0 && strings.ContainsRune("._-", r))
		if !ok {
			return fmt.Errorf("%w: %s %q: character %q at byte %d not allowed", ErrInvalid, field, s, r, i)
		}
	}
	return nil
}
