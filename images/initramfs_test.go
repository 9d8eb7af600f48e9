package images

import (
	"github.com/bootfabric/bootfabric/internal/testenv"

	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// newcEntry is one parsed entry of a newc archive.
type newcEntry struct {
	name  string
	mode  uint32
	data  []byte
	rmaj  uint32
	rmin  uint32
	nlink uint32
}

// parseNewc reads a newc archive independently of CpioWriter.
func parseNewc(t *testing.T, b []byte) []newcEntry {
	t.Helper()
	var out []newcEntry
	off := 0
	align := func(n int) int { return (n + 3) &^ 3 }
	for {
		if off+110 > len(b) || string(b[off:off+6]) != "070701" {
			t.Fatalf("bad header at offset %d", off)
		}
		field := func(i int) uint32 {
			v, err := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
			if err != nil {
				t.Fatalf("bad field %d at offset %d", i, off)
			}
			return uint32(v)
		}
		mode, nlink, size, rmaj, rmin, namesize := field(1), field(4), field(6), field(9), field(10), field(11)
		name := string(b[off+110 : off+110+int(namesize)-1])
		if b[off+110+int(namesize)-1] != 0 {
			t.Fatalf("name %q not NUL-terminated", name)
		}
		dataOff := align(off + 110 + int(namesize))
		if name == "TRAILER!!!" {
			return out
		}
		out = append(out, newcEntry{name, mode, b[dataOff : dataOff+int(size)], rmaj, rmin, nlink})
		off = align(dataOff + int(size))
	}
}

func needBusybox(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(DefaultBusybox); err != nil {
		testenv.Skip(t, "%s absent (Debian package busybox-static)", DefaultBusybox)
	}
	return DefaultBusybox
}

func TestBuildInitramfs(t *testing.T) {
	bbPath := needBusybox(t)
	if err := checkStatic(bbPath); err != nil {
		testenv.Skip(t, "%v", err)
	}
	var a, b bytes.Buffer
	must(t, BuildInitramfs(&a, InitramfsConfig{}))
	must(t, BuildInitramfs(&b, InitramfsConfig{}))
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two builds from the same inputs differ")
	}
	zr, err := gzip.NewReader(bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if len(raw)%4 != 0 {
		t.Errorf("archive length %d not a multiple of 4", len(raw))
	}
	ents := parseNewc(t, raw)
	byName := map[string]newcEntry{}
	var names []string
	for _, e := range ents {
		byName[e.name] = e
		names = append(names, e.name)
	}
	want := []string{"bin", "dev", "etc", "proc", "run", "sbin", "sys", "tmp", "usr", "usr/bin", "usr/sbin",
		"dev/console", "bin/busybox", "bin/sh", "etc/udhcpc.script", "init"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("entries (-want +got):\n%s", diff)
	}
	bb, _ := os.ReadFile(bbPath)
	if sha256.Sum256(byName["bin/busybox"].data) != sha256.Sum256(bb) {
		t.Error("bin/busybox differs from the source binary")
	}
	checks := []struct {
		name string
		mode uint32
	}{
		{"init", CpioRegular | 0o755}, {"bin/sh", CpioSymlink | 0o777}, {"dev/console", CpioCharDev | 0o600}, {"bin", CpioDir | 0o755},
	}
	for _, c := range checks {
		if got := byName[c.name].mode; got != c.mode {
			t.Errorf("%s mode %o, want %o", c.name, got, c.mode)
		}
	}
	if c := byName["dev/console"]; c.rmaj != 5 || c.rmin != 1 {
		t.Errorf("dev/console is %d:%d, want 5:1", c.rmaj, c.rmin)
	}
	if string(byName["bin/sh"].data) != "busybox" || string(byName["init"].data) != AgentInit(InitramfsLayout()) {
		t.Error("bin/sh target or init contents wrong")
	}
}

// execLayout is an agent that execs an init after its report, as an imported image's does.
func execLayout() AgentLayout {
	return AgentLayout{Busybox: "/a/busybox", ModulesDir: "/a/modules", ModulesOrder: "/a/modules.order",
		DHCPScript: "/a/udhcpc.script", IPFile: "/a/ip", Init: "/sbin/init"}
}

// TestInitScriptsParse checks the shell syntax of /init and the udhcpc
// script with busybox sh -n.
func TestInitScriptsParse(t *testing.T) {
	bb := needBusybox(t)
	dir := t.TempDir()
	for name, body := range map[string]string{"init": AgentInit(InitramfsLayout()), "udhcpc.script": AgentDHCPScript(InitramfsLayout()),
		"agent init": AgentInit(execLayout()), "stage one": AgentInit(stageOneLayout())} {
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte(body), 0o755))
		if out, err := exec.Command(bb, "sh", "-n", p).CombinedOutput(); err != nil {
			t.Errorf("busybox sh -n %s: %v\n%s", name, err, out)
		}
	}
	for _, want := range []string{"udhcpc -i", "bootfabric.health=", "--post-data", "poweroff -f"} {
		if !strings.Contains(AgentInit(InitramfsLayout()), want) {
			t.Errorf("the test initramfs's init lacks %q", want)
		}
	}
	if s := AgentInit(execLayout()); !strings.Contains(s, `exec "$init"`) || strings.Contains(s, "poweroff") || strings.Contains(s, "switch_root") {
		t.Errorf("an agent with an init powers off, switches root, or does not exec it:\n%s", s)
	}
}

func stageOneLayout() AgentLayout {
	l := execLayout()
	l.Fetcher, l.SeedFor, l.Home = "/a/bootfetch", "3m0s", "/a"
	return l
}

// TestStageOneInit: a first stage's /init fetches the root with the fetcher and the kernel line's
// parameters, boots it only once the fetcher said it is verified, reports a failure instead, and
// leaves its own files out of the new root.
func TestStageOneInit(t *testing.T) {
	s := AgentInit(stageOneLayout())
	for _, want := range []string{
		`( /a/bootfetch --server "$server" --profile "$profile" --file "$root" --node "$node" --token "$token"`,
		`--bind "$($bb cat /a/ip)" --out /seed/root.img --seed-for "$seed"`, `seed="3m0s"`, `bootfabric.seed=*) seed=`, `bootfabric.token=*) token=`,
		`grep -q " verified " /seed/fetch.log`, `echo $? > /seed/fetch.exit`, `seeded*) echo "bootfabric: $l"`, `if [ ! -f /seed/root.img ]; then`, `status=failed`,
		`[ "$status" = ok ] && fetch_root`, `zcat /seed/root.img | $bb cpio -i -d -m -u`, `/init | /a | /proc`,
		`exec $bb switch_root /newroot "$init"`, `mount -o move "/$d" "/newroot/$d"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("stage one's /init lacks %q", want)
		}
	}
	// The report comes after the fetch, and switch_root only after the report.
	fetch, report, sw := strings.Index(s, "&& fetch_root"), strings.Index(s, "--post-data"), strings.Index(s, "exec $bb switch_root")
	if fetch < 0 || report < fetch || sw < report {
		t.Errorf("order: fetch at %d, report at %d, switch_root at %d", fetch, report, sw)
	}
	if strings.Contains(AgentInit(execLayout()), "bootfetch") || strings.Contains(AgentInit(execLayout()), "bootfabric.root") {
		t.Error("a one-stage agent fetches a root")
	}
}

// TestInitramfsCpioTool lists and extracts the archive with GNU cpio.
func TestInitramfsCpioTool(t *testing.T) {
	bb := needBusybox(t)
	cpio, err := exec.LookPath("cpio")
	if err != nil {
		testenv.Skip(t, "cpio not installed (Debian package cpio)")
	}
	dir := t.TempDir()
	img := filepath.Join(dir, "initrd.gz")
	must(t, WriteInitramfs(img, InitramfsConfig{Busybox: bb}))
	gz, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cpio, "-t", "--quiet")
	cmd.Stdin = bytes.NewReader(raw)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v\n%s", err, out)
	}
	listed := strings.Fields(string(out))
	if diff := cmp.Diff([]string{"bin", "dev", "etc", "proc", "run", "sbin", "sys", "tmp", "usr", "usr/bin", "usr/sbin",
		"dev/console", "bin/busybox", "bin/sh", "etc/udhcpc.script", "init"}, listed); diff != "" {
		t.Fatalf("cpio -t (-want +got):\n%s", diff)
	}
	if os.Geteuid() != 0 {
		return // extracting dev/console needs root
	}
	ex := filepath.Join(dir, "x")
	must(t, os.Mkdir(ex, 0o755))
	cmd = exec.CommandContext(ctx, cpio, "-i", "-d", "--quiet", "--no-absolute-filenames")
	cmd.Dir = ex
	cmd.Stdin = bytes.NewReader(raw)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cpio -i: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(ex, "init"))
	if err != nil || string(got) != AgentInit(InitramfsLayout()) {
		t.Fatalf("extracted init: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(ex, "bin/sh")); err != nil || l != "busybox" {
		t.Fatalf("extracted bin/sh link = %q, %v", l, err)
	}
	if out, err := exec.Command(filepath.Join(ex, "bin/busybox"), "echo", "ok").CombinedOutput(); err != nil || strings.TrimSpace(string(out)) != "ok" {
		t.Fatalf("extracted busybox: %q %v", out, err)
	}
	fi, err := os.Stat(filepath.Join(ex, "init"))
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("init mode %v, %v", fi.Mode(), err)
	}
}

func TestBuildInitramfsErrors(t *testing.T) {
	dir := t.TempDir()
	notELF := filepath.Join(dir, "busybox")
	must(t, os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755))
	tests := []struct{ name, busybox, want string }{
		{"missing", filepath.Join(dir, "nope"), "busybox-static"},
		{"not elf", notELF, "not an ELF binary"},
	}
	if _, err := os.Stat("/bin/ls"); err == nil {
		tests = append(tests, struct{ name, busybox, want string }{"dynamic", "/bin/ls", "dynamically linked"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := BuildInitramfs(io.Discard, InitramfsConfig{Busybox: tc.busybox})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want containing %q", err, tc.want)
			}
		})
	}
}
