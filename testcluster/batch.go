package testcluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.uber.org/zap"
)

// nodeBatch is a batch of container nodes that boot at once, each by a shell script in its
// namespace (nodeScript, fleetNodeScript). Every script prints "ready" and waits for its line on a
// FIFO, the gate; each line it prints after that is "EVENT UNIX-SECONDS ARGS...". Times count from
// the gate's opening, so that starting hundreds of processes does not spread the nodes' start over
// the batch.
type nodeBatch struct {
	script     string // the node script, run by sh -c
	udhcpc     string // udhcpc's event script, written to udhcpcFile for the node script
	udhcpcFile string // its name in the cluster directory
	// env is more environment for the k-th node's script (nil: none).
	env func(k int) []string
	// onOpen is told the gate's opening time, before any event (nil: nothing).
	onOpen func(start time.Time)
	// onEvent gets each event of the k-th node (NodeEvent.Node is its index in Cluster.Nodes),
	// from the goroutine that reads that node's script.
	onEvent func(k int, ev NodeEvent)
	// onExit gets the k-th node's script's end: Wait's error and what it wrote on stderr.
	onExit func(k int, err error, stderr string)
}

// nodeLinksUp defines ts, the time stamp of the events a node script prints, and brings the
// node's links up.
const nodeLinksUp = `ts() { date +%s.%N; }
ip link set lo up
ip link set eth0 up
`

// waitAtGate is how every node script begins: the node's links up, "ready", then a wait for its
// line on the gate (BF_GATE). It defines ts, the time stamp of the events the script prints.
const waitAtGate = nodeLinksUp + `echo "ready $(ts)"
read -r _ < "$BF_GATE" || true
`

// runBatch runs b on nodes (indices into c.Nodes) within timeout: it starts every node's script,
// opens the gate once each is ready (or the timeout passed), and waits for them all. It returns the
// host's CPU use from the gate's opening to the last script's end; its error is a failure to
// start, not a node's (onExit sees those).
func (c *Cluster) runBatch(ctx context.Context, nodes []int, timeout time.Duration, b nodeBatch) (CPUUse, error) {
	scriptPath := filepath.Join(c.dir(), b.udhcpcFile)
	if err := os.WriteFile(scriptPath, []byte(b.udhcpc), 0o755); err != nil {
		return CPUUse{}, err
	}
	g, err := c.openGate(len(nodes))
	if err != nil {
		return CPUUse{}, err
	}
	defer g.close()
	grp := newNodeGroup(c.Name, len(nodes), c.log)
	defer func() {
		if err := grp.remove(); err != nil {
			c.log.Warn("node scripts' CPU group left", zap.Error(err))
		}
	}()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var wg sync.WaitGroup
	for k, i := range nodes {
		env := append(os.Environ(), "BF_UDHCPC_SCRIPT="+scriptPath, "BF_GATE="+g.path)
		if b.env != nil {
			env = append(env, b.env(k)...)
		}
		if err := c.startBatchNode(ctx, &wg, g, grp, b, k, i, env); err != nil {
			return CPUUse{}, err
		}
	}
	for range nodes {
		select {
		case <-g.ready:
		case <-ctx.Done():
		}
	}
	cpu0 := readCPU()
	g.open(len(nodes), b.onOpen, c.log)
	wg.Wait()
	return readCPU().since(cpu0), nil
}

// nodeNice is the nice level of the node scripts. Each emulated node stands for a machine of its own,
// but here hundreds of them share the host's cores with the boot servers: at the same priority, a
// server is one of 1,500 runnable tasks in a 500-node storm and waited seconds for a core to read
// its socket (4 of 500 nodes ran out of udhcpc's three REQUESTs in the full suite, issue 24, while
// the server used 2.8 CPU-seconds). At nice 10 each node process weighs a tenth of a server
// thread, which is closer to a server on a machine of its own.
const nodeNice = 10

// startBatchNode starts the k-th node's script (node i of the cluster) and the goroutine that reads
// its output and reports its end.
func (c *Cluster) startBatchNode(ctx context.Context, wg *sync.WaitGroup, g *bootGate, grp nodeGroup, b nodeBatch, k, i int, env []string) error {
	cmd := exec.CommandContext(ctx, "nice", "-n", strconv.Itoa(nodeNice), "ip", "netns", "exec", c.Nodes[i].Namespace, "sh", "-c", b.script)
	cmd.Env = env
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	// Before the gate opens, so that everything the script starts after it is in the group.
	if err := grp.add(cmd.Process.Pid); err != nil {
		c.log.Warn("node script left out of the nodes' CPU group", zap.String("node", c.Nodes[i].Name), zap.Error(err))
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		g.readNode(stdout, func(ev NodeEvent) {
			ev.Node = i
			b.onEvent(k, ev)
		})
		b.onExit(k, cmd.Wait(), stderr.String())
	}()
	return nil
}

// bootGate is the FIFO the node scripts of a batch wait on, and what tells when they are ready and
// when it opened.
type bootGate struct {
	path   string
	f      *os.File
	ready  chan struct{} // one value per node script at the gate (or ended before it)
	opened chan struct{} // closed once start is set
	start  time.Time     // when the gate opened
}

// openGate makes the cluster's gate FIFO for n node scripts and opens it.
func (c *Cluster) openGate(n int) (*bootGate, error) {
	path := filepath.Join(c.dir(), "gate")
	os.Remove(path)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, fmt.Errorf("boot gate: %w", err)
	}
	// Opened read-write, the FIFO never blocks the scripts' open: they block in read until their
	// line is written.
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("boot gate: %w", err)
	}
	return &bootGate{path: path, f: f, ready: make(chan struct{}, n), opened: make(chan struct{})}, nil
}

// open records the start, tells onOpen (when not nil) and lets n scripts through.
func (g *bootGate) open(n int, onOpen func(time.Time), log *zap.Logger) {
	g.start = time.Now()
	if onOpen != nil {
		onOpen(g.start)
	}
	close(g.opened)
	if _, err := g.f.Write(bytes.Repeat([]byte("\n"), n)); err != nil {
		log.Warn("boot gate: opening failed; nodes will time out", zap.Error(err))
	}
}

func (g *bootGate) close() {
	g.f.Close()
	os.Remove(g.path)
}

// readNode reads one node script's output: it signals ready at the script's "ready" line (or at
// its end when it failed before the gate, so that the others are not kept waiting) and hands each
// event, timed from the gate's opening, to event.
func (g *bootGate) readNode(stdout io.Reader, event func(NodeEvent)) {
	readied := false
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		if f[0] == "ready" {
			if !readied {
				readied = true
				g.ready <- struct{}{}
			}
			continue
		}
		sec, err := strconv.ParseFloat(f[1], 64)
		if err != nil {
			continue
		}
		<-g.opened // events come after the gate; this orders the read of start
		event(NodeEvent{Name: f[0], At: sec - float64(g.start.UnixNano())/1e9, Args: f[2:]})
	}
	if !readied {
		g.ready <- struct{}{} // failed before the gate: do not keep the others waiting
	}
}

// nodeOutcome is how one node's boot ended, for the batch's summary.
type nodeOutcome struct {
	node    string
	seconds float64 // to the health report
	err     string
	done    bool // it reported health
}

// batchOutcome returns a batch's time (the slowest booted node's) and its failed nodes as
// "node: error", sorted.
func batchOutcome[T interface{ outcome() nodeOutcome }](ts []T) (batch float64, failed []string) {
	for _, t := range ts {
		o := t.outcome()
		if !o.done {
			failed = append(failed, o.node+": "+o.err)
			continue
		}
		batch = max(batch, o.seconds)
	}
	sort.Strings(failed)
	return batch, failed
}

// notBooted is a batch's error when some of its total nodes failed (sorted, as batchOutcome
// returns them), nil when none did.
func notBooted(failed []string, total int) error {
	if len(failed) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d nodes did not boot; first: %s", len(failed), total, failed[0])
}

// orAll returns nodes, or every node of the cluster when nodes is nil.
func (c *Cluster) orAll(nodes []int) []int {
	if nodes == nil {
		for i := range c.Nodes {
			nodes = append(nodes, i)
		}
	}
	return nodes
}
