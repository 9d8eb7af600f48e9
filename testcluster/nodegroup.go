package testcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// nodeGroup is the CPU control group a large batch's node scripts run in: the whole batch weighs
// as much as one nice-0 process, so that a thousand emulated machines cannot starve the boot
// servers they boot from.
//
// Nice alone does not do it. The kernel groups the tasks of a session (sched_autogroup, on in
// Debian's kernels) and shares the CPU between groups first: the servers, the test binary, the
// race run beside it and the node scripts are all in the test's session, where a nice-10 node
// process weighs about a tenth of a server thread, so 1,000 of them runnable outweighed each
// server a hundred times. In a full-suite run (2026-11-28, the race run beside it) three of the
// 1,000-node storm's four servers left REQUESTs in their queues for more than 9 s, and 117 nodes
// ran out of udhcpc's patience. In a group of their own (cgroup v1 cpu.shares 1,024, v2
// cpu.weight 100) the nodes get half the CPU when the rest of the session wants the other half:
// beside a race run, the servers' queues waited 0.2 s in all. A group weighing the nodes at nice
// 10 up to 64 of them (7,040 shares) outweighed the whole session seven times: 2,500-4,300 s.
//
// Batches of up to groupMinNodes nodes keep to nice alone, as they always ran (and as the
// benchmarks' figures were measured). The zero value (no group) adds nothing.
type nodeGroup struct {
	dir string // the group's directory; "" when there is none
}

// groupMinNodes is the largest batch that runs without a group of its own.
const groupMinNodes = 64

// newNodeGroup makes the group of a batch of the given size, named after the cluster, under the
// cgroup v1 cpu controller or the v2 unified hierarchy where its root already hands the cpu
// controller to its children (the host's set-up is left as it is). A small batch, or a host with
// neither, gets the zero group (the latter logged).
func newNodeGroup(cluster string, nodes int, log *zap.Logger) nodeGroup {
	if nodes <= groupMinNodes {
		return nodeGroup{}
	}
	name := fmt.Sprintf("bootfabric-nodes-%s-%d", cluster, os.Getpid())
	var errs []error
	for _, root := range []struct {
		path   string
		v2     bool
		file   string
		weight string
	}{
		{"/sys/fs/cgroup/cpu", false, "cpu.shares", "1024"},
		{"/sys/fs/cgroup", true, "cpu.weight", "100"},
	} {
		dir, err := makeCPUGroup(root.path, root.v2, name)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, root.file), []byte(root.weight), 0)
			if err == nil {
				return nodeGroup{dir: dir}
			}
			syscall.Rmdir(dir)
		}
		errs = append(errs, err)
	}
	log.Warn("node scripts share the CPU with the boot servers by nice alone (no CPU control group)", zap.Error(errors.Join(errs...)))
	return nodeGroup{}
}

func makeCPUGroup(root string, v2 bool, name string) (string, error) {
	if v2 {
		ctl, err := os.ReadFile(filepath.Join(root, "cgroup.subtree_control"))
		if err != nil {
			return "", err
		}
		if !strings.Contains(" "+strings.TrimSpace(string(ctl))+" ", " cpu ") {
			return "", fmt.Errorf("%s: the cpu controller is not enabled for its children", root)
		}
	} else if _, err := os.Stat(filepath.Join(root, "cpu.shares")); err != nil {
		return "", err
	}
	dir := filepath.Join(root, name)
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return "", err
	}
	return dir, nil
}

// add moves process pid into the group (its children to come follow it). A process that has
// ended already is no error.
func (g nodeGroup) add(pid int) error {
	if g.dir == "" {
		return nil
	}
	err := os.WriteFile(filepath.Join(g.dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// remove deletes the group once its processes are gone, waiting up to a few seconds for the last
// ones (a killed script's children) to end.
func (g nodeGroup) remove() error {
	if g.dir == "" {
		return nil
	}
	var err error
	for range 50 {
		if err = syscall.Rmdir(g.dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("removing the node scripts' CPU group %s: %w", g.dir, err)
}
