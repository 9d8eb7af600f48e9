package testcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// BootFiles are the sizes of the files a container node fetches, in bytes: the NBP over TFTP as PXE
// firmware does, then the kernel and initrd over HTTP as iPXE does.
type BootFiles struct {
	NBP    string // path of the NBP served by TFTP (undionly.kpxe from Debian's ipxe)
	Kernel int64
	Initrd int64
}

// ServerOptions configure the boot servers a cluster runs.
type ServerOptions struct {
	// Bootctl is the bootctl binary run in each server namespace.
	Bootctl string
	// Mapping is the block-cyclic algorithm the servers use (scda, bcda, ...).
	Mapping string
	Files   BootFiles
	// Flat gives the servers no topology file and an inventory of names and MACs alone, as the
	// admin of a cluster without a modelled network writes it: the servers build the flat machine
	// (topology.Flat) from it and hand the nodes addresses from a dhcp.pool. The cluster's machine
	// must then be that flat machine, so that the nodes' positions match the servers'.
	Flat bool
	// Overlays are overlay directories every node gets (serve's overlays, images.Overlay).
	Overlays []string
	// Progress, when set, is told during Measure's boot how many nodes have booted of all (see
	// BootProgress); the servers do not use it. It rides here because Measure makes its cluster
	// itself and ServerOptions is what the caller hands it.
	Progress func(done, total int)
}

// dir is the cluster's working directory (configs, images, logs, server state).
func (c *Cluster) dir() string { return strings.TrimSuffix(c.path, ".json") }

// StartServers writes a shared image store with a test profile (a kernel and an initrd of the
// sizes in opt.Files), then each server's configuration and the inventory, starts `bootctl serve`
// in every server namespace and waits until each answers.
func (c *Cluster) StartServers(ctx context.Context, opt ServerOptions) error {
	if err := os.MkdirAll(c.dir(), 0o755); err != nil {
		return err
	}
	if err := c.writeImages(ctx, opt); err != nil {
		return err
	}
	return c.startServersWithImages(ctx, opt)
}

func mustPrefix(ip string, bits int) netip.Prefix {
	return netip.PrefixFrom(netip.MustParseAddr(ip), bits).Masked()
}

// waitHTTP polls the server's /healthz from inside its namespace.
func (c *Cluster) waitHTTP(ctx context.Context, s Endpoint) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, err := c.run.Run(ctx, "ip", "netns", "exec", s.Namespace, "curl", "-sf", "--max-time", "1", "http://127.0.0.1/healthz")
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			logText, _ := os.ReadFile(filepath.Join(c.dir(), s.Name+".log"))
			return fmt.Errorf("boot server %s did not come up: %v\n%s", s.Name, err, tail(string(logText), 10))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// writeImages creates the image store with profile "default": a kernel and an initrd of the given
// sizes (pseudo-random, so that nothing on the path can compress them).
func (c *Cluster) writeImages(ctx context.Context, opt ServerOptions) error {
	dir := c.dir()
	files := map[string]int64{"kernel": opt.Files.Kernel, "initrd": opt.Files.Initrd}
	var args []string
	for _, name := range []string{"kernel", "initrd"} {
		p := filepath.Join(dir, name)
		if err := writeRandom(p, files[name]); err != nil {
			return err
		}
		args = append(args, "--"+name, p)
	}
	argv := append([]string{opt.Bootctl, "image", "add", "--store", filepath.Join(dir, "images"), "--name", "default"}, args...)
	_, err := c.run.Run(ctx, argv...)
	return err
}

func writeRandom(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	x := uint64(0x9e3779b97f4a7c15)
	for i := int64(0); i < size; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		_ = w.WriteByte(byte(x))
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// Timeline is one container node's boot as its clients saw it, in seconds from the batch start.
type Timeline struct {
	Node     string             `json:"node"`
	Server   string             `json:"server"`
	Events   map[string]float64 `json:"events"`
	Seconds  float64            `json:"seconds"` // to the health report
	Err      string             `json:"error,omitempty"`
	finished bool
}

// nodeScript boots one container node with clients nobody here wrote: busybox udhcpc as a PXE BIOS
// client (option 60 PXEClient, option 93 arch 0), curl over TFTP for the NBP the DHCP answer names,
// curl over HTTP for the iPXE script, the kernel and initrd it names, and curl to POST the health
// report to the URL on the script's kernel line. Each step prints "EVENT UNIX-SECONDS". Every
// node first prints "ready" and waits for its line on the gate FIFO, so that all start at once.
const nodeScript = "set -e\n" + waitAtGate + nodeBootSteps

// nodeBootSteps are nodeScript's steps after the gate: the node's boot proper. udhcpc -n gives
// up once three REQUESTs for an offer go unanswered, where a PXE ROM starts over from DISCOVER:
// the node starts udhcpc again, at most twice, and says so ("dhcp-again"). A 1,000-node storm
// lost one node that way in six full-suite runs (its REQUESTs or their ACKs lost at 100 % CPU).
const nodeBootSteps = `out=$(mktemp)
export BF_OUT="$out"
tries=1
until udhcpc -i eth0 -f -q -n -t 20 -T 3 -A 1 -V PXEClient:Arch:00000:UNDI:002001 -x 0x5d:0000 -s "$BF_UDHCPC_SCRIPT" >/dev/null; do
	[ "$tries" -lt 3 ] || exit 1
	tries=$((tries + 1))
	echo "dhcp-again $(ts)"
done
read -r ACKED SIADDR BOOTFILE < "$out"
rm -f "$out"
echo "bound $ACKED $SIADDR"
curl -sSf --max-time 600 -o /dev/null --tftp-blksize 1468 "tftp://$SIADDR/$BOOTFILE"
echo "nbp $(ts)"
mac=$(cat /sys/class/net/eth0/address)
script=$(curl -sSf --max-time 30 "http://$SIADDR/ipxe/$mac")
kernel=$(echo "$script" | awk '$1 == "kernel" {print $2}')
initrd=$(echo "$script" | awk '$1 == "initrd" {print $2}')
health=$(echo "$script" | tr ' ' '\n' | sed -n 's/^bootfabric.health=//p')
curl -sSf --max-time 600 -o /dev/null "$kernel"
echo "kernel $(ts)"
curl -sSf --max-time 600 -o /dev/null "$initrd"
echo "initrd $(ts)"
curl -sSf --max-time 30 -o /dev/null -H 'Content-Type: application/json' -d '{"status":"ok","details":"container node"}' "$health"
echo "reported $(ts)"
`

// udhcpcScript is udhcpc's event script: on bound it records when the ACK came (the node's "bound"
// time), the next-server and the boot file for the node script, and configures the address.
const udhcpcScript = `#!/bin/sh
case "$1" in
bound|renew)
	acked=$(date +%s.%N)
	ip addr flush dev "$interface"
	ip addr add "$ip/$mask" dev "$interface"
	echo "$acked $siaddr $boot_file" > "$BF_OUT"
	;;
esac
exit 0
`

// Boot boots the given nodes (indices; nil: all) at once and returns their timelines, the batch
// time (the slowest node's), and the host's CPU use during the boot. Every node's script is
// started first and waits at a gate; times count from the gate's opening, so that starting
// hundreds of processes does not spread the nodes' start over the batch.
func (c *Cluster) Boot(ctx context.Context, nodes []int, timeout time.Duration) ([]Timeline, float64, CPUUse, error) {
	return c.BootProgress(ctx, nodes, timeout, nil)
}

// BootProgress is Boot, telling progress (when not nil) how many nodes have booted (reported
// healthy) of all, once when the gate opens and then as each node reports, from the goroutines
// that watch the nodes: a boot of hundreds of nodes takes tens of seconds.
func (c *Cluster) BootProgress(ctx context.Context, nodes []int, timeout time.Duration, progress func(done, total int)) ([]Timeline, float64, CPUUse, error) {
	nodes = c.orAll(nodes)
	if err := c.announceReboots(ctx, nodes); err != nil {
		return nil, 0, CPUUse{}, err
	}
	out := make([]Timeline, len(nodes))
	for k, i := range nodes {
		out[k] = Timeline{Node: c.Nodes[i].Name, Events: map[string]float64{}}
	}
	var booted atomic.Int64
	cpu, err := c.runBatch(ctx, nodes, timeout, nodeBatch{
		script: nodeScript, udhcpc: udhcpcScript, udhcpcFile: "udhcpc.script",
		onOpen: func(time.Time) {
			if progress != nil {
				progress(0, len(nodes))
			}
		},
		onEvent: func(k int, ev NodeEvent) { out[k].record(ev, c.serverByIP) },
		onExit: func(k int, err error, stderr string) {
			if out[k].exited(err, stderr) && progress != nil {
				progress(int(booted.Add(1)), len(nodes))
			}
		},
	})
	if err != nil {
		return nil, 0, CPUUse{}, err
	}
	batch, failed := batchOutcome(out)
	if len(failed) > 0 {
		c.log.Warn("nodes failed to boot", zap.Strings("nodes", failed))
	}
	return out, batch, cpu, notBooted(failed, len(out))
}

// record notes one event of the node's boot; "bound" names the server that answered (serverByIP).
func (t *Timeline) record(ev NodeEvent, serverByIP func(ip string) string) {
	t.Events[ev.Name] = ev.At
	if ev.Name == "bound" && len(ev.Args) > 0 {
		t.Server = serverByIP(ev.Args[0])
	}
}

// exited notes the end of the node's script and says whether the node booted.
func (t *Timeline) exited(err error, stderr string) bool {
	if err != nil {
		t.Err = fmt.Sprintf("%v: %s", err, strings.TrimSpace(stderr))
		return false
	}
	t.Seconds = t.Events["reported"]
	t.finished = true
	return true
}

// outcome is the node's boot for the batch's summary (batchOutcome).
func (t Timeline) outcome() nodeOutcome {
	return nodeOutcome{node: t.Node, seconds: t.Seconds, err: t.Err, done: t.finished}
}

func (c *Cluster) serverByIP(ip string) string {
	for _, s := range c.Servers {
		if s.IP == ip {
			return s.Name
		}
	}
	return ip
}

// CPUUse is the host's CPU use over an interval: busy share of all cores, and the core count.
type CPUUse struct {
	Busy        float64 `json:"busy"` // 0..1
	Cores       int     `json:"cores"`
	total, idle uint64
}

func readCPU() CPUUse {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return CPUUse{}
	}
	var u CPUUse
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 5 && f[0] == "cpu" {
			for i, v := range f[1:] {
				n, _ := strconv.ParseUint(v, 10, 64)
				u.total += n
				if i == 3 || i == 4 { // idle, iowait
					u.idle += n
				}
			}
		} else if len(f) > 0 && strings.HasPrefix(f[0], "cpu") {
			u.Cores++
		}
	}
	return u
}

func (u CPUUse) since(before CPUUse) CPUUse {
	dt := u.total - before.total
	if dt == 0 {
		return CPUUse{Cores: u.Cores}
	}
	return CPUUse{Busy: 1 - float64(u.idle-before.idle)/float64(dt), Cores: u.Cores}
}

// ServerSummary is one boot server's /api/v1/summary as JSON text.
type ServerSummary struct {
	Server  string          `json:"server"`
	IP      string          `json:"ip"`
	Summary json.RawMessage `json:"summary"`
}

// Summaries asks every boot server for its summary, from inside its namespace.
func (c *Cluster) Summaries(ctx context.Context) ([]ServerSummary, error) {
	var out []ServerSummary
	for _, s := range c.Servers {
		text, err := c.run.Run(ctx, "ip", "netns", "exec", s.Namespace, "curl", "-sSf", "--max-time", "5", "http://127.0.0.1/api/v1/summary")
		if err != nil {
			return nil, fmt.Errorf("boot server %s: %w", s.Name, err)
		}
		if !json.Valid([]byte(text)) {
			return nil, fmt.Errorf("boot server %s: summary is not JSON: %q", s.Name, tail(text, 3))
		}
		out = append(out, ServerSummary{Server: s.Name, IP: s.IP, Summary: json.RawMessage(strings.TrimSpace(text))})
	}
	return out, nil
}
