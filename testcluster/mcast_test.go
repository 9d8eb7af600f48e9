package testcluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

// multicastEverywhere sends the server's initrd to every node at once with udpcast: udp-receiver
// on each node, then udp-sender on the server, which waits until all of them have said hello and
// sends the file once to a multicast group (each receiver asks again for what it lost). It checks
// every node's bytes and returns the time from the receivers' start until the last one had the
// whole file. udpcast runs with its own defaults but one: --nokbd, since nobody presses a key here.
func (c *Cluster) multicastEverywhere(ctx context.Context, t *testing.T) time.Duration {
	t.Helper()
	return c.multicastEvery(ctx, t, 0, 0)
}

// multicastEvery is multicastEverywhere with the receivers started every apart, as a staggered
// boot's nodes arrive. A udpcast session cannot be joined once it has started, so the server runs
// one session after another, each starting when every node still without the file has said hello
// or maxWait after the first of them did (udp-sender's --max-wait), until every node has it.
func (c *Cluster) multicastEvery(ctx context.Context, t *testing.T, every, maxWait time.Duration) time.Duration {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(c.dir(), "initrd")
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	start := time.Now()
	var left atomic.Int64
	left.Store(int64(len(c.Nodes)))
	done := make(chan error, len(c.Nodes))
	go func() {
		for k, n := range c.Nodes {
			time.Sleep(time.Until(start.Add(time.Duration(k) * every)))
			cmd := exec.CommandContext(ctx, "ip", "netns", "exec", n.Namespace, "udp-receiver", "--file", filepath.Join(dir, n.Name),
				"--interface", "eth0", "--nokbd")
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			go func() {
				err := cmd.Run()
				if err != nil {
					err = fmt.Errorf("%s: udp-receiver: %w\n%s", n.Name, err, tail(out.String(), 5))
				}
				left.Add(-1)
				done <- err
			}()
		}
	}()
	// The sessions end with the receivers: one begun after the last node had its file (its count
	// of nodes left not yet down) would wait for nobody.
	sctx, stopSessions := context.WithCancel(ctx)
	var sessions []string
	senderDone := make(chan struct{})
	go func() {
		defer close(senderDone)
		for left.Load() > 0 && sctx.Err() == nil {
			if s := c.udpSenderSession(sctx, t, src, int(left.Load()), maxWait); s != "" {
				sessions = append(sessions, s)
			}
		}
	}()
	for range c.Nodes {
		if err := <-done; err != nil {
			stopSessions()
			<-senderDone
			t.Fatalf("%v\nsender sessions: %q", err, sessions)
		}
	}
	elapsed := time.Since(start)
	stopSessions()
	<-senderDone
	t.Logf("multicast, a node every %v: %d session(s): %s", every, len(sessions), strings.Join(sessions, "; "))
	want, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if got, err := os.ReadFile(filepath.Join(dir, n.Name)); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: multicast gave %d bytes that are not the file (%v)", n.Name, len(got), err)
		}
	}
	return elapsed
}

// udpSenderSession runs one udp-sender session of src on the server for receivers (or those that
// said hello within maxWait of the first, when maxWait is not 0) and says how it went: when its
// data started after the session began, how long the data took, and udp-sender's summary ("" when
// it sent nothing: stopped, or no receiver came within its start timeout).
func (c *Cluster) udpSenderSession(ctx context.Context, t *testing.T, src string, receivers int, maxWait time.Duration) string {
	args := []string{"netns", "exec", c.Servers[0].Namespace, "udp-sender", "--file", src, "--interface", "eth0",
		"--min-receivers", strconv.Itoa(receivers), "--nokbd", "--start-timeout", "20"}
	if maxWait > 0 {
		args = append(args, "--max-wait", strconv.Itoa(int(maxWait.Seconds())))
	}
	log := &startWatch{mark: []byte("Starting transfer")}
	cmd := exec.CommandContext(ctx, "ip", args...)
	cmd.Stdout, cmd.Stderr = log, log
	begun := time.Now()
	err := cmd.Run()
	at := log.at()
	if at.IsZero() {
		return ""
	}
	if err != nil && ctx.Err() == nil {
		t.Errorf("udp-sender: %v\n%s", err, tail(log.String(), 10))
	}
	return fmt.Sprintf("%d receiver(s), data after %.1f s, for %.1f s, %s", strings.Count(log.String(), "New connection"),
		at.Sub(begun).Seconds(), time.Since(at).Seconds(), lastMatch(rexmits, log.String()))
}

// rexmits is udp-sender's summary of a transfer: its bytes and what it sent again.
var rexmits = regexp.MustCompile(`bytes=[ 0-9]+re-xmits=[0-9]+ *\( *[0-9.]+%\)`)

// lastMatch is re's last match in s ("" when none).
func lastMatch(re *regexp.Regexp, s string) string {
	all := re.FindAllString(s, -1)
	if len(all) == 0 {
		return ""
	}
	return strings.Join(strings.Fields(all[len(all)-1]), " ")
}

// startWatch keeps what a process writes and notes when mark first appears in it.
type startWatch struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	mark []byte
	seen time.Time
}

func (w *startWatch) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if w.seen.IsZero() && bytes.Contains(w.buf.Bytes(), w.mark) {
		w.seen = time.Now()
	}
	return len(p), nil
}

func (w *startWatch) String() string { w.mu.Lock(); defer w.mu.Unlock(); return w.buf.String() }

// at is when the mark appeared (zero: not yet).
func (w *startWatch) at() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.seen }

// predictDeliveries is what `bootctl simulate` predicts for sending the p2pSize file to every node
// of c at once, from the server alone ("unicast"), through peers ("p2p") and by multicast
// ("multicast", FULB trees): the makespan of the file alone, after a 1 KB network boot program, with no
// DHCP, POST or health time, as the fetch tests measure it.
func (c *Cluster) predictDeliveries(ctx context.Context, t testing.TB, bin string) map[string]float64 {
	t.Helper()
	mach, err := c.Machine.MarshalYAMLText()
	if err != nil {
		t.Fatal(err)
	}
	file := testfix.WriteFile(t, filepath.Join(t.TempDir(), "machine.yaml"), mach)
	pred := map[string]float64{}
	for _, delivery := range []string{"p2p", "multicast"} {
		out, err := exec.CommandContext(ctx, bin, "simulate", "-t", file, "--algo", "bcda", "--batch", "all",
			"--files", fmt.Sprintf("nbp=1KB:none,initrd=%dMiB:none", p2pSize>>20), "--dhcp-time", "0s", "--health", "0s",
			"--delivery", delivery, "-o", "json").Output()
		if err != nil {
			t.Fatalf("bootctl simulate --delivery %s: %v %s", delivery, err, stderrOf(err))
		}
		var res struct {
			Runs []struct {
				Delivery string `json:"delivery"`
				Result   struct {
					Batch float64 `json:"batch_seconds"`
				} `json:"result"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("bootctl simulate --delivery %s -o json: %v\n%s", delivery, err, out)
		}
		for _, r := range res.Runs {
			pred[r.Delivery] = r.Result.Batch
		}
	}
	return pred
}

// stderrOf is what a failed command printed on stderr.
func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return strings.TrimSpace(string(ee.Stderr))
	}
	return ""
}
