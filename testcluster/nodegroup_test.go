package testcluster

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap/zaptest"
)

// A large batch's group weighs one nice-0 process, takes a process, and is gone once the process
// is; a small batch has none.
func TestNodeGroup(t *testing.T) {
	needRoot(t)
	if g := newNodeGroup("grouptest", groupMinNodes, zaptest.NewLogger(t)); g.dir != "" {
		t.Errorf("a batch of %d nodes has a group, %s", groupMinNodes, g.dir)
		g.remove()
	}
	for range 2 {
		g := newNodeGroup("grouptest", groupMinNodes+1, zaptest.NewLogger(t))
		if g.dir == "" {
			t.Skip("no CPU control group on this host (the node scripts go by nice alone)")
		}
		file, want := "cpu.shares", "1024"
		if !strings.HasPrefix(g.dir, "/sys/fs/cgroup/cpu/") {
			file, want = "cpu.weight", "100"
		}
		b, err := os.ReadFile(filepath.Join(g.dir, file))
		if err != nil || strings.TrimSpace(string(b)) != want {
			t.Errorf("%s %q (%v), want %s", file, b, err, want)
		}
		cmd := exec.Command("sleep", "30")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if err := g.add(cmd.Process.Pid); err != nil {
			t.Error(err)
		}
		procs, _ := os.ReadFile(filepath.Join(g.dir, "cgroup.procs"))
		if !slices.Contains(strings.Fields(string(procs)), strconv.Itoa(cmd.Process.Pid)) {
			t.Errorf("process %d not in the group: %q", cmd.Process.Pid, procs)
		}
		cmd.Process.Kill()
		cmd.Wait()
		if err := g.remove(); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(g.dir); !os.IsNotExist(err) {
			t.Errorf("group %s still there: %v", g.dir, err)
		}
	}
}
