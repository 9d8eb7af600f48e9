package integration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
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
const nodeScript = `set -e
ts() { date +%s.%N; }
ip link set lo up
ip link set eth0 up
echo "ready $(ts)"
read -r _ < "$BF_GATE" || true
out=$(mktemp)
export BF_OUT="$out"
udhcpc -i eth0 -f -q -n -t 20 -T 3 -A 1 -V PXEClient:Arch:00000:UNDI:002001 -x 0x5d:0000 -s "$BF_UDHCPC_SCRIPT" >/dev/null
read -r SIADDR BOOTFILE < "$out"
rm -f "$out"
echo "bound $(ts) $SIADDR"
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

// udhcpcScript is udhcpc's event script: on bound it configures the address and records the
// next-server and boot file for the node script.
const udhcpcScript = `#!/bin/sh
case "$1" in
bound|renew)
	ip addr flush dev "$interface"
	ip addr add "$ip/$mask" dev "$interface"
	echo "$siaddr $boot_file" > "$BF_OUT"
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
	if nodes == nil {
		for i := range c.Nodes {
			nodes = append(nodes, i)
		}
	}
	if err := c.announceReboots(ctx, nodes); err != nil {
		return nil, 0, CPUUse{}, err
	}
	scriptPath := filepath.Join(c.dir(), "udhcpc.script")
	if err := os.WriteFile(scriptPath, []byte(udhcpcScript), 0o755); err != nil {
		return nil, 0, CPUUse{}, err
	}
	gatePath := filepath.Join(c.dir(), "gate")
	os.Remove(gatePath)
	if err := syscall.Mkfifo(gatePath, 0o600); err != nil {
		return nil, 0, CPUUse{}, fmt.Errorf("boot gate: %w", err)
	}
	defer os.Remove(gatePath)
	// Opened read-write, the FIFO never blocks the scripts' open: they block in read until their
	// line is written.
	gate, err := os.OpenFile(gatePath, os.O_RDWR, 0)
	if err != nil {
		return nil, 0, CPUUse{}, fmt.Errorf("boot gate: %w", err)
	}
	defer gate.Close()

	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := make([]Timeline, len(nodes))
	var wg sync.WaitGroup
	var start time.Time           // when the gate opened
	opened := make(chan struct{}) // closed once start is set
	ready := make(chan struct{}, len(nodes))
	var booted atomic.Int64
	for k, i := range nodes {
		n := c.Nodes[i]
		out[k] = Timeline{Node: n.Name, Events: map[string]float64{}}
		cmd := exec.CommandContext(ctx, "ip", "netns", "exec", n.Namespace, "sh", "-c", nodeScript)
		cmd.Env = append(os.Environ(), "BF_UDHCPC_SCRIPT="+scriptPath, "BF_GATE="+gatePath)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return nil, 0, CPUUse{}, err
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, 0, CPUUse{}, err
		}
		wg.Add(1)
		go func(t *Timeline) {
			defer wg.Done()
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
						ready <- struct{}{}
					}
					continue
				}
				sec, err := strconv.ParseFloat(f[1], 64)
				if err != nil {
					continue
				}
				<-opened // events come after the gate; this orders the read of start
				t.Events[f[0]] = sec - float64(start.UnixNano())/1e9
				if f[0] == "bound" && len(f) > 2 {
					t.Server = c.serverByIP(f[2])
				}
			}
			if !readied {
				ready <- struct{}{} // failed before the gate: do not keep the others waiting
			}
			if err := cmd.Wait(); err != nil {
				t.Err = fmt.Sprintf("%v: %s", err, strings.TrimSpace(stderr.String()))
				return
			}
			t.Seconds = t.Events["reported"]
			t.finished = true
			if progress != nil {
				progress(int(booted.Add(1)), len(nodes))
			}
		}(&out[k])
	}
	for range nodes {
		select {
		case <-ready:
		case <-ctx.Done():
		}
	}
	cpu0 := readCPU()
	start = time.Now()
	close(opened)
	if progress != nil {
		progress(0, len(nodes))
	}
	if _, err := gate.Write(bytes.Repeat([]byte("\n"), len(nodes))); err != nil {
		c.log.Warn("boot gate: opening failed; nodes will time out", zap.Error(err))
	}
	wg.Wait()
	cpu := readCPU().since(cpu0)
	batch := 0.0
	var failed []string
	for _, t := range out {
		if !t.finished {
			failed = append(failed, t.Node+": "+t.Err)
			continue
		}
		batch = max(batch, t.Seconds)
	}
	sort.Strings(failed)
	if len(failed) > 0 {
		c.log.Warn("nodes failed to boot", zap.Strings("nodes", failed))
		return out, batch, cpu, fmt.Errorf("%d of %d nodes did not boot; first: %s", len(failed), len(out), failed[0])
	}
	return out, batch, cpu, nil
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
