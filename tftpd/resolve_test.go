package tftpd

import (
	"errors"
	"io/fs"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	long := strings.Repeat("a", MaxFilenameLen+1)
	longElem := strings.Repeat("b", 256)
	tests := []struct {
		name string
		in   string
		want string // "" means refused
	}{
		{"plain", "undionly.kpxe", "undionly.kpxe"},
		{"nested", "boot/default/vmlinuz", "boot/default/vmlinuz"},
		{"absolute", "/undionly.kpxe", "undionly.kpxe"},
		{"double slash absolute", "//boot//x", "boot/x"},
		{"dot elements", "./boot/./x", "boot/x"},
		{"trailing slash", "boot/x/", "boot/x"},
		{"backslashes", `boot\x64\wdsnbp.com`, "boot/x64/wdsnbp.com"},
		{"leading backslash", `\pxelinux.0`, "pxelinux.0"},
		{"mixed separators", `/boot\x/y`, "boot/x/y"},
		{"dots in names", "a..b/...", "a..b/..."},
		{"utf8 name", "bööt/ké", "bööt/ké"},
		{"spaces kept", "my file", "my file"},
		{"max length", strings.Repeat("c", MaxFilenameLen), strings.Repeat("c", MaxFilenameLen)},

		{"empty", "", ""},
		{"root", "/", ""},
		{"only dots", "./.", ""},
		{"only backslash", `\`, ""},
		{"dotdot", "..", ""},
		{"dotdot prefix", "../etc/passwd", ""},
		{"dotdot absolute", "/../etc/passwd", ""},
		{"dotdot middle", "boot/../../etc/passwd", ""},
		{"dotdot harmless looking", "a/../b", ""},
		{"dotdot backslash", `..\..\windows`, ""},
		{"dotdot trailing", "boot/..", ""},
		{"nul", "a\x00b", ""},
		{"newline", "a\nb", ""},
		{"del", "a\x7fb", ""},
		{"invalid utf8", "a\xffb", ""},
		{"too long", long, ""},
		{"element too long", longElem, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.in)
			if tc.want == "" {
				if err == nil {
					t.Fatalf("Resolve(%q) = %q, want refusal", tc.in, got)
				}
				if !errors.Is(err, ErrBadPath) {
					t.Fatalf("Resolve(%q) error %v does not wrap ErrBadPath", tc.in, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve(%q) error: %v", tc.in, err)
			}
			if got != tc.want {
				t.Fatalf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzResolve checks the confinement invariants: an accepted name becomes a
// valid io/fs path with no ".." element, no backslash and no leading slash,
// and resolving it again gives the same path.
func FuzzResolve(f *testing.F) {
	for _, s := range []string{"undionly.kpxe", "/boot/x", `a\b`, "../x", "a/../../b", "a\x00b", "", "/", "./.", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := Resolve(name)
		if err != nil {
			if !errors.Is(err, ErrBadPath) {
				t.Fatalf("Resolve(%q) error %v does not wrap ErrBadPath", name, err)
			}
			return
		}
		if !fs.ValidPath(p) || p == "." {
			t.Fatalf("Resolve(%q) = %q: not a valid file path", name, p)
		}
		if strings.ContainsAny(p, "\\\x00") || strings.HasPrefix(p, "/") {
			t.Fatalf("Resolve(%q) = %q: has backslash, NUL or leading slash", name, p)
		}
		for _, e := range strings.Split(p, "/") {
			if e == ".." || e == "." || e == "" {
				t.Fatalf("Resolve(%q) = %q: element %q", name, p, e)
			}
		}
		if len(p) > len(name) {
			t.Fatalf("Resolve(%q) = %q: longer than the request", name, p)
		}
		again, err := Resolve(p)
		if err != nil || again != p {
			t.Fatalf("Resolve(Resolve(%q)) = %q, %v; want %q", name, again, err, p)
		}
	})
}
