package testcluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/nodestate/etcdstore"
	"gopkg.in/yaml.v3"
)

// mgmtBridge names the host's management bridge of cluster name.
func mgmtBridge(name string) string { return "bf-" + name + "-mgmt" }

// AddMgmt connects every boot server's namespace to the host's own namespace through one bridge
// there, "bf-NAME-mgmt", on prefix (a /24 or larger): the host gets the prefix's first address,
// server j the (2+j)th on its interface "mgmt0". It returns the host's address, where etcd can
// listen. The bridge and the veths are recorded before they are made, so Down removes them.
//
// etcd is reached over this network, not the boot network, so that shaping and boot traffic do not
// touch it and a server's death cuts nobody else off.
func (c *Cluster) AddMgmt(ctx context.Context, prefix netip.Prefix) (netip.Addr, error) {
	br := mgmtBridge(c.Name)
	if len(br) > 15 {
		return netip.Addr{}, specErr("cluster name %q: too long for a management bridge name (%s, at most 15 characters)", c.Name, br)
	}
	if !prefix.Addr().Is4() || prefix.Bits() > 24 {
		return netip.Addr{}, specErr("management subnet %s: want an IPv4 /24 or larger", prefix)
	}
	if _, err := c.run.Run(ctx, "ip", "link", "show", "dev", br); err == nil {
		return netip.Addr{}, specErr("cluster %q: host link %s is left over from an earlier run; remove it with `ip link del %s`", c.Name, br, br)
	}
	if out, err := c.run.Run(ctx, "ip", "-4", "route", "show", "root", prefix.Masked().String()); err != nil || strings.TrimSpace(out) != "" {
		return netip.Addr{}, specErr("management subnet %s is in use on this host (%s%v): pick another", prefix, strings.TrimSpace(out), err)
	}
	host := addrAt(prefix, 1)
	bits := strconv.Itoa(prefix.Bits())
	c.HostLinks = append(c.HostLinks, br)
	if err := c.save(); err != nil {
		return netip.Addr{}, err
	}
	for _, argv := range [][]string{
		{"ip", "link", "add", br, "type", "bridge", "forward_delay", "0", "stp_state", "0"},
		{"ip", "addr", "add", host.String() + "/" + bits, "dev", br},
		{"ip", "link", "set", br, "up"},
	} {
		if _, err := c.run.Run(ctx, argv...); err != nil {
			return netip.Addr{}, err
		}
	}
	for j, s := range c.Servers {
		hostEnd := fmt.Sprintf("bf%sm%d", c.Name, j)
		c.HostLinks = append(c.HostLinks, hostEnd)
		if err := c.save(); err != nil {
			return netip.Addr{}, err
		}
		for _, argv := range [][]string{
			{"ip", "link", "add", hostEnd, "type", "veth", "peer", "name", "mgmt0", "netns", s.Namespace},
			{"ip", "link", "set", hostEnd, "master", br},
			{"ip", "link", "set", hostEnd, "up"},
			{"ip", "-n", s.Namespace, "addr", "add", addrAt(prefix, 2+j).String() + "/" + bits, "dev", "mgmt0"},
			{"ip", "-n", s.Namespace, "link", "set", "mgmt0", "up"},
		} {
			if _, err := c.run.Run(ctx, argv...); err != nil {
				return netip.Addr{}, err
			}
		}
	}
	return host, nil
}

// FleetOptions configure the fleet a cluster's boot servers form.
type FleetOptions struct {
	// Bootctl is the bootctl binary.
	Bootctl string
	// Mapping is the fleet's block-cyclic algorithm (bcda, ...).
	Mapping string
	Files   BootFiles
	// Etcd are the etcd client endpoints, reachable from the server namespaces (AddMgmt).
	Etcd []string
	// Fleet names the fleet (default "default").
	Fleet string
	// TTL is the membership lease (default 3 s).
	TTL time.Duration
	// LogLevel is the servers' log level (default debug: every boot state change is logged).
	LogLevel string
	// EtcdTLS, when set, is an etcd that checks client certificates and users: StartFleet makes
	// the fleet's users and roles (fleet auth, as root), turns authentication on, and every
	// server and the operator then use a certificate of their own.
	EtcdTLS *EtcdCerts
}

// EtcdCerts are the certificates of an etcd with TLS client authentication (etcdtest's TLS mode).
type EtcdCerts struct {
	CA string
	// Cert returns the certificate and key files of the etcd user cn (the certificate's CN).
	Cert func(cn string) (cert, key string)
}

// fleetOperator is the etcd user of the test's operator.
const fleetOperator = "admin"

// etcdFlags are the TLS flags of bootctl for etcd user cn, none without TLS.
func (o FleetOptions) etcdFlags(cn string) []string {
	if o.EtcdTLS == nil {
		return nil
	}
	cert, key := o.EtcdTLS.Cert(cn)
	return []string{"--etcd-ca", o.EtcdTLS.CA, "--etcd-cert", cert, "--etcd-key", key}
}

// etcdOptions are the fleet client options of etcd user cn.
func (o FleetOptions) etcdOptions(cn string) (fleet.Options, error) {
	opts := fleet.Options{Endpoints: o.Etcd, Fleet: o.Fleet}
	if o.EtcdTLS != nil {
		cert, key := o.EtcdTLS.Cert(cn)
		tc, err := fleet.LoadTLS(o.EtcdTLS.CA, cert, key)
		if err != nil {
			return opts, err
		}
		opts.TLS = tc
	}
	return opts, nil
}

// setupAuth makes the fleet's etcd users and roles as root and turns authentication on.
func (f *Fleet) setupAuth(ctx context.Context) error {
	opts, err := f.Opt.etcdOptions(fleet.RootUser)
	if err != nil {
		return err
	}
	opts.Log = f.log.Named("fleet")
	root, err := fleet.Open(ctx, opts)
	if err != nil {
		return err
	}
	defer root.Close()
	var names []string
	for _, s := range f.Servers {
		names = append(names, s.Name)
	}
	if err := root.SetupAuth(ctx, names, fleetOperator); err != nil {
		return err
	}
	return root.EnableAuth(ctx)
}

// Fleet is a cluster's running fleet of boot servers.
type Fleet struct {
	*Cluster
	Opt  FleetOptions
	mu   sync.Mutex
	pids map[string]int // running server processes by server name
}

// StartFleet writes the image store (a profile "default" of opt.Files' sizes), the machine, the
// inventory and fleet.yaml, stores the fleet's configuration in etcd with `bootctl fleet apply`,
// gives each server a copy of the store, then starts `bootctl serve --etcd ... --name bsN` in every
// server namespace and waits until each answers HTTP.
func (c *Cluster) StartFleet(ctx context.Context, opt FleetOptions) (*Fleet, error) {
	opt.defaults()
	dir := c.dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := c.writeImages(ctx, ServerOptions{Bootctl: opt.Bootctl, Files: opt.Files}); err != nil {
		return nil, err
	}
	if err := c.writeMachineFiles(dir); err != nil {
		return nil, err
	}
	fleetFile, err := c.writeFleetFile(dir, opt.Mapping)
	if err != nil {
		return nil, err
	}
	f := &Fleet{Cluster: c, Opt: opt, pids: map[string]int{}}
	if err := f.writeSigningKey(); err != nil {
		return nil, err
	}
	if opt.EtcdTLS != nil {
		if err := f.setupAuth(ctx); err != nil {
			return nil, err
		}
	}
	if err := f.apply(ctx, fleetFile); err != nil {
		return nil, err
	}
	if err := f.startAll(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// defaults fills in the defaults named on the fields.
func (o *FleetOptions) defaults() {
	if o.Fleet == "" {
		o.Fleet = "default"
	}
	if o.TTL == 0 {
		o.TTL = fleet.DefaultTTL
	}
	if o.LogLevel == "" {
		o.LogLevel = "debug"
	}
}

// writeFleetFile writes the fleet's configuration (mapping algo), DIR/fleet.yaml, and returns its
// path.
func (c *Cluster) writeFleetFile(dir, algo string) (string, error) {
	doc := map[string]any{
		"servers": c.configServers(), "topology": "machine.yaml", "mapping": algo,
		"inventory": "inventory.csv", "images": "images", "profile": "default", "state_flush": "200ms",
		"tftp": map[string]any{"max_block_size": 1468},
		"dhcp": map[string]any{"mode": "reservation", "subnet": c.bootSubnet(), "lease_time": "1h"},
	}
	data, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	fleetFile := filepath.Join(dir, "fleet.yaml")
	return fleetFile, os.WriteFile(fleetFile, data, 0o644)
}

// startAll gives each server a copy of the image store, starts every server and waits until each
// answers HTTP.
func (f *Fleet) startAll(ctx context.Context) error {
	dir := f.dir()
	for _, s := range f.Servers {
		if _, err := f.run.Run(ctx, "cp", "-a", filepath.Join(dir, "images"), filepath.Join(dir, "images-"+s.Name)); err != nil {
			return err
		}
	}
	for _, s := range f.Servers {
		if err := f.StartServer(ctx, s.Name); err != nil {
			return err
		}
	}
	for _, s := range f.Servers {
		if err := f.waitHTTP(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// writeSigningKey makes the fleet's keys as bootctl fleet keygen does: DIR/operator.key signs the
// configuration, the servers trust DIR/operator.key.pub and share DIR/operator.key.secret.
func (f *Fleet) writeSigningKey() error {
	priv, pub, err := fleet.GenerateSigningKey(nil)
	if err != nil {
		return err
	}
	if err := os.WriteFile(f.signingKey(), priv, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(f.signingKey()+".secret", fleet.GenerateFleetSecret(), 0o600); err != nil {
		return err
	}
	return os.WriteFile(f.signingKey()+".pub", pub, 0o644)
}

func (f *Fleet) signingKey() string { return filepath.Join(f.dir(), "operator.key") }

// apply stores the fleet file as the fleet's configuration with `bootctl fleet apply`.
func (f *Fleet) apply(ctx context.Context, fleetFile string) error {
	_, err := f.run.Run(ctx, append([]string{f.Opt.Bootctl, "fleet", "apply", "-f", fleetFile, "--etcd", strings.Join(f.Opt.Etcd, ","),
		"--fleet", f.Opt.Fleet, "--sign-key", f.signingKey()}, f.Opt.etcdFlags(fleetOperator)...)...)
	return err
}

// Client opens a fleet client on the fleet's etcd (as the operator), for the test to read what the
// servers wrote.
func (f *Fleet) Client(ctx context.Context) (*fleet.Client, error) {
	opts, err := f.Opt.etcdOptions(fleetOperator)
	if err != nil {
		return nil, err
	}
	opts.Log = f.log.Named("fleet")
	return fleet.Open(ctx, opts)
}

// server returns the endpoint of the named server.
func (f *Fleet) server(name string) (Endpoint, error) {
	for _, s := range f.Servers {
		if s.Name == name {
			return s, nil
		}
	}
	return Endpoint{}, fmt.Errorf("no boot server %q", name)
}

// LogPath is the named server's log (appended across restarts).
func (f *Fleet) LogPath(name string) string { return filepath.Join(f.dir(), name+".log") }

// StartServer starts (or restarts) the named fleet member in its namespace; it does not wait.
func (f *Fleet) StartServer(ctx context.Context, name string) error {
	s, err := f.server(name)
	if err != nil {
		return err
	}
	f.mu.Lock()
	_, running := f.pids[name]
	f.mu.Unlock()
	if running {
		return fmt.Errorf("boot server %s is running", name)
	}
	dir := f.dir()
	logf, err := os.OpenFile(f.LogPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	f.useBBR(ctx, s) // as for the single servers: short queues on the shaped links
	ipxeDir := filepath.Dir(f.Opt.Files.NBP)
	// `ip netns exec` execs the command: the pid is bootctl's own, so SIGKILL reaches the server.
	args := []string{"netns", "exec", s.Namespace, f.Opt.Bootctl, "--log-level", f.Opt.LogLevel, "serve",
		"--etcd", strings.Join(f.Opt.Etcd, ","), "--name", name, "--fleet", f.Opt.Fleet, "--lease-ttl", f.Opt.TTL.String(),
		"--config-key", f.signingKey() + ".pub", "--fleet-secret", f.signingKey() + ".secret",
		"--http", ":80", "--tftp", ":69", "--interface", "eth0", "--ipxe-dir", ipxeDir,
		"--state-dir", filepath.Join(dir, "state-"+name), "--images", filepath.Join(dir, "images-"+name)}
	cmd := exec.Command("ip", append(args, f.Opt.etcdFlags(name)...)...)
	cmd.Stdout, cmd.Stderr = logf, logf
	err = cmd.Start()
	logf.Close()
	if err != nil {
		return fmt.Errorf("start server %s: %w", name, err)
	}
	pid := cmd.Process.Pid
	f.mu.Lock()
	f.pids[name] = pid
	err = f.AddPid(pid)
	f.mu.Unlock()
	if err != nil {
		return err
	}
	go func() {
		_ = cmd.Wait()
		// Reaped: forget the pid so that Down never signals a process that reused it.
		f.mu.Lock()
		if f.pids[name] == pid {
			delete(f.pids, name)
		}
		f.Pids = slices.DeleteFunc(f.Pids, func(p int) bool { return p == pid })
		_ = f.save()
		f.mu.Unlock()
	}()
	return nil
}

// WaitServer waits until the named server answers HTTP on its boot address.
func (f *Fleet) WaitServer(ctx context.Context, name string) error {
	s, err := f.server(name)
	if err != nil {
		return err
	}
	return f.waitHTTP(ctx, s)
}

// Pid is the named server's process, 0 when it is not running.
func (f *Fleet) Pid(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pids[name]
}

// Kill sends SIGKILL to the named server (a crash: no lease revoked, no state saved) and returns
// the time it was sent.
func (f *Fleet) Kill(name string) (time.Time, error) {
	pid := f.Pid(name)
	if pid == 0 {
		return time.Time{}, fmt.Errorf("boot server %s is not running", name)
	}
	comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	if got := strings.TrimSpace(string(comm)); got != filepath.Base(f.Opt.Bootctl) {
		return time.Time{}, fmt.Errorf("boot server %s: pid %d is %q, not %s", name, pid, got, filepath.Base(f.Opt.Bootctl))
	}
	at := time.Now()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return at, fmt.Errorf("kill %s (pid %d): %w", name, pid, err)
	}
	return at, nil
}

// Members returns the live members' names as etcd has them.
func (f *Fleet) Members(ctx context.Context, fc *fleet.Client) ([]string, error) {
	ms, _, err := fc.Members(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	slices.Sort(out)
	return out, nil
}

// NodeEvent is one step of a container node's boot, as its script printed it.
type NodeEvent struct {
	Node int     // index into Cluster.Nodes
	Name string  // on, dhcp, bound, nbp, kernel, initrd, reported, fail
	At   float64 // seconds from the gate's opening
	// Args: dhcp: the attempt; bound: the server's address and the node's; kernel: the token of
	// the node's script ("-": none); fail: the step and
	// the client's exit status.
	Args []string
}

// FleetTimeline is one node's whole boot, every attempt.
type FleetTimeline struct {
	Node   string      `json:"node"`
	Events []NodeEvent `json:"events"`
	// Seconds is when the node reported health; Done says it did.
	Seconds float64 `json:"seconds"`
	Done    bool    `json:"done"`
	Err     string  `json:"error,omitempty"`
}

// First returns the first event of the given name at or after t, and whether there is one.
func (tl *FleetTimeline) First(name string, t float64) (NodeEvent, bool) {
	for _, e := range tl.Events {
		if e.Name == name && e.At >= t {
			return e, true
		}
	}
	return NodeEvent{}, false
}

// Count returns how many events of the given name the node printed.
func (tl *FleetTimeline) Count(name string) int {
	n := 0
	for _, e := range tl.Events {
		if e.Name == name {
			n++
		}
	}
	return n
}

// FleetBootOptions configure BootFleet.
type FleetBootOptions struct {
	// Nodes are the nodes to boot (indices; nil: all).
	Nodes []int
	// Delays are the nodes' power-on times after the gate, in seconds, parallel to Nodes (nil:
	// all at once).
	Delays []float64
	// Attempts bounds each node's boot attempts (default 6).
	Attempts int
	Timeout  time.Duration
	// OnEvent, when set, sees every event as it happens, from several goroutines.
	OnEvent func(NodeEvent)
	// OnStart, when set, is told when the gate opens (FleetBoot.Start, from which every event's
	// time counts), before any event.
	OnStart func(start time.Time)
}

// FleetBoot is the result of BootFleet.
type FleetBoot struct {
	// Start is when the gate opened; every time is counted from it.
	Start time.Time
	Nodes []FleetTimeline
	// Batch is the last health report's time.
	Batch float64
	CPU   CPUUse
}

// retryFirmware boots a container node as PXE firmware and iPXE retry: any step that fails (no
// DHCP answer, a transfer cut by a dead server) starts the boot over from DHCP, at most BF_ATTEMPTS
// times, which is how a fleet's new owner gets the node. udhcpc asks every second (-T 1) for up to
// a minute. An HTTP transfer from a server that dies fails at once (its kernel closes the
// connection); a TFTP transfer only times out, so the NBP (74 KB, milliseconds) gets 4 s, as a PXE
// ROM's TFTP gives up after a few seconds of retries (curl then retransmits after 1 s); the kernel
// and the initrd get BF_FILE_TIMEOUT seconds each. Each step prints "EVENT UNIX-SECONDS ARGS"; ts
// and the links come first (waitAtGate).
const retryFirmware = `echo "on $(ts)"
mac=$(cat /sys/class/net/eth0/address)
attempt=0
while [ "$attempt" -lt "$BF_ATTEMPTS" ]; do
	attempt=$((attempt + 1))
	echo "dhcp $(ts) $attempt"
	out=$(mktemp)
	BF_OUT="$out" udhcpc -i eth0 -f -q -n -t 60 -T 1 -A 1 -V PXEClient:Arch:00000:UNDI:002001 -x 0x5d:0000 -s "$BF_UDHCPC_SCRIPT" >/dev/null 2>&1 || { echo "fail $(ts) dhcp $?"; rm -f "$out"; continue; }
	read -r ACKED SIADDR YIADDR BOOTFILE < "$out" || true
	rm -f "$out"
	echo "bound $ACKED $SIADDR $YIADDR"
	curl -sSf --max-time 4 -o /dev/null --tftp-blksize 1468 "tftp://$SIADDR/$BOOTFILE" || { echo "fail $(ts) nbp $?"; continue; }
	echo "nbp $(ts)"
	script=$(curl -sSf --max-time 10 "http://$SIADDR/ipxe/$mac") || { echo "fail $(ts) script $?"; continue; }
	kernel=$(echo "$script" | awk '$1 == "kernel" {print $2}')
	initrd=$(echo "$script" | awk '$1 == "initrd" {print $2}')
	health=$(echo "$script" | tr ' ' '\n' | sed -n 's/^bootfabric.health=//p')
	tok=$(echo "$health" | sed -n 's/.*token=//p')
	curl -sSf --max-time "$BF_FILE_TIMEOUT" -o /dev/null "$kernel" || { echo "fail $(ts) kernel $?"; continue; }
	echo "kernel $(ts) ${tok:--}"
	curl -sSf --max-time "$BF_FILE_TIMEOUT" -o /dev/null "$initrd" || { echo "fail $(ts) initrd $?"; continue; }
	echo "initrd $(ts)"
	curl -sSf --max-time 10 -o /dev/null -H 'Content-Type: application/json' -d '{"status":"ok","details":"container node"}' "$health" || { echo "fail $(ts) health $?"; continue; }
	echo "reported $(ts)"
	exit 0
done
echo "giveup $(ts)"
exit 1
`

// fleetNodeScript is retryFirmware behind the batch's gate, after the node's delay.
const fleetNodeScript = "set -u\n" + waitAtGate + `if [ "$BF_DELAY" != 0 ]; then sleep "$BF_DELAY"; fi
` + retryFirmware

// fleetUdhcpcScript is udhcpc's event script: on bound it records when the ACK came (the node's
// "bound" time: printed after udhcpc exits, on a loaded host it came up to a second later), the
// next-server, the address and the boot file, and configures the address.
const fleetUdhcpcScript = `#!/bin/sh
case "$1" in
bound|renew)
	acked=$(date +%s.%N)
	ip addr flush dev "$interface"
	ip addr add "$ip/$mask" dev "$interface"
	echo "$acked $siaddr $ip $boot_file" > "$BF_OUT"
	;;
esac
exit 0
`

// BootFleet boots nodes with retries (fleetNodeScript): every node's script starts, waits at a
// gate, powers on after its delay and boots until it reports health or runs out of attempts.
func (c *Cluster) BootFleet(ctx context.Context, opt FleetBootOptions) (*FleetBoot, error) {
	nodes := c.orAll(opt.Nodes)
	if opt.Delays != nil && len(opt.Delays) != len(nodes) {
		return nil, fmt.Errorf("boot: %d delays for %d nodes", len(opt.Delays), len(nodes))
	}
	if opt.Attempts == 0 {
		opt.Attempts = 6
	}
	res := &FleetBoot{Nodes: make([]FleetTimeline, len(nodes))}
	for k, i := range nodes {
		res.Nodes[k] = FleetTimeline{Node: c.Nodes[i].Name}
	}
	// As for one server: a booted node's new attempt (and its token) takes the operator's word.
	if err := c.announceReboots(ctx, nodes); err != nil {
		return nil, err
	}
	cpu, err := c.runBatch(ctx, nodes, opt.Timeout, nodeBatch{
		script: fleetNodeScript, udhcpc: fleetUdhcpcScript, udhcpcFile: "udhcpc-fleet.script",
		env: func(k int) []string {
			return []string{"BF_DELAY=" + opt.delay(k), "BF_ATTEMPTS=" + strconv.Itoa(opt.Attempts), "BF_FILE_TIMEOUT=120"}
		},
		onOpen: func(start time.Time) {
			res.Start = start
			if opt.OnStart != nil {
				opt.OnStart(start)
			}
		},
		onEvent: func(k int, ev NodeEvent) {
			res.Nodes[k].Events = append(res.Nodes[k].Events, ev)
			if opt.OnEvent != nil {
				opt.OnEvent(ev)
			}
		},
		onExit: func(k int, err error, stderr string) { res.Nodes[k].exited(err, stderr) },
	})
	if err != nil {
		return nil, err
	}
	res.CPU = cpu
	var failed []string
	res.Batch, failed = batchOutcome(res.Nodes)
	return res, notBooted(failed, len(nodes))
}

// delay is the k-th node's power-on time after the gate, in seconds, as the node script takes it.
func (o FleetBootOptions) delay(k int) string {
	if o.Delays == nil {
		return "0"
	}
	return strconv.FormatFloat(o.Delays[k], 'f', 3, 64)
}

// exited notes the end of the node's script: its error, or its health report's time.
func (tl *FleetTimeline) exited(err error, stderr string) {
	if err != nil {
		tl.Err = fmt.Sprintf("%v: %s", err, tail(strings.TrimSpace(stderr), 5))
		return
	}
	if e, ok := tl.First("reported", 0); ok {
		tl.Seconds, tl.Done = e.At, true
	}
}

// outcome is the node's boot for the batch's summary (batchOutcome).
func (tl FleetTimeline) outcome() nodeOutcome {
	return nodeOutcome{node: tl.Node, seconds: tl.Seconds, err: tl.Err, done: tl.Done}
}

// ServerByIP names the boot server with the given boot-network address.
func (c *Cluster) ServerByIP(ip string) string { return c.serverByIP(ip) }

// PredictFailures is Predict with boot servers failing during the boot: fabricsim.BootSim, what
// `bootctl simulate --fail bsN@T --detect D` runs, with the new owners from the fleet's rule.
func (c *Cluster) PredictFailures(ctx context.Context, algo string, files BootFiles, rtt float64, bound []float64,
	fails []fabricsim.ServerFailure, detect float64) (*fabricsim.FlowResult, error) {
	in, err := c.predictInput(algo, files, rtt, bound)
	if err != nil {
		return nil, err
	}
	sim := &fabricsim.BootSim{Graph: in.g, Algo: in.algo, Batch: in.batch, Config: in.cfg, Failures: fails, DetectSeconds: detect}
	return sim.Simulate(ctx, in.asg)
}

// ErrNotAllHealthy is returned by WaitHealthy when the bound runs out.
var ErrNotAllHealthy = errors.New("not every node is healthy in etcd")

// WaitHealthy waits (at most d) until etcd's record of every node says healthy, and returns the
// records last read.
func (f *Fleet) WaitHealthy(ctx context.Context, fc *fleet.Client, d time.Duration) ([]nodestate.NodeStatus, error) {
	deadline := time.Now().Add(d)
	for {
		recs, err := etcdstore.LoadAll(ctx, fc)
		if err == nil && len(recs) == len(f.Nodes) && !slices.ContainsFunc(recs, func(r nodestate.NodeStatus) bool { return r.State != nodestate.Healthy }) {
			return recs, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if err == nil {
				err = ErrNotAllHealthy
			}
			return recs, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Metric reads one series of the named server's /metrics, from inside its namespace: a name, with
// its labels as exposed (`bootfabric_fleet_takeover_nodes_total{from="bs1"}`) if it has any.
func (f *Fleet) Metric(ctx context.Context, name, metric string) (float64, error) {
	s, err := f.server(name)
	if err != nil {
		return 0, err
	}
	// Without -f: a failing /metrics says why in its body.
	text, err := f.run.Run(ctx, "ip", "netns", "exec", s.Namespace, "curl", "-sS", "--max-time", "2", "http://127.0.0.1/metrics")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(line, metric+" "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	return 0, fmt.Errorf("server %s: no metric %s in /metrics: %s", name, metric, tail(text, 3))
}

// LogLine is one line of a server's log (zap's console format: time, level, [logger,] message,
// JSON fields).
type LogLine struct {
	At     time.Time
	Msg    string
	Fields map[string]any
}

// LogLines returns the named server's log lines with message msg (all when empty) since t.
func (f *Fleet) LogLines(name, msg string, since time.Time) []LogLine {
	fh, err := os.Open(f.LogPath(name))
	if err != nil {
		return nil
	}
	defer fh.Close()
	var out []LogLine
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		parts := strings.Split(sc.Text(), "\t")
		if len(parts) < 3 {
			continue
		}
		at, err := time.Parse("2006-01-02T15:04:05.000Z0700", parts[0])
		if err != nil || at.Before(since) {
			continue
		}
		l := LogLine{At: at, Msg: parts[len(parts)-1]}
		if last := parts[len(parts)-1]; strings.HasPrefix(last, "{") {
			l.Msg = parts[len(parts)-2]
			_ = json.Unmarshal([]byte(last), &l.Fields)
		}
		if msg == "" || l.Msg == msg {
			out = append(out, l)
		}
	}
	return out
}

// WaitOwned waits (at most d) until every server's latest ownership (its last "fleet ownership"
// log line, since since[name] when given: a restarted server's own) has no dead server and want
// nodes: the full fleet's ownership, e.g. after a server came back.
func (f *Fleet) WaitOwned(ctx context.Context, want int, since map[string]time.Time, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		var got []string
		ok := true
		for _, s := range f.Servers {
			lines := f.LogLines(s.Name, "fleet ownership", since[s.Name])
			if len(lines) == 0 {
				ok = false
				got = append(got, s.Name+"=?")
				continue
			}
			l := lines[len(lines)-1]
			owned, _ := l.Fields["owned"].(float64)
			dead, _ := l.Fields["dead"].([]any)
			if int(owned) != want || len(dead) > 0 {
				ok = false
			}
			got = append(got, fmt.Sprintf("%s=%v (dead %v)", s.Name, owned, dead))
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("servers own %s, want %d each", strings.Join(got, " "), want)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// SimulateCommand runs `bootctl simulate --fail FAIL --detect DETECT` on the cluster's machine,
// scaled as Predict scales it (capacity times scale times WireEfficiency), with the cluster's files,
// the measured round trip and each node's measured arrival (its first bound time, DHCP then
// counting as done), and returns its batch time with the failure and without it, and the command
// line.
func (c *Cluster) SimulateCommand(ctx context.Context, bootctl, algo string, files BootFiles, rtt float64, arrivals []float64,
	fail string, detect time.Duration) (withFail, baseline float64, argv []string, err error) {
	dir := c.dir()
	mach, err := ScaledMachine(c.Machine, c.Scale*WireEfficiency).MarshalYAMLText()
	if err != nil {
		return 0, 0, nil, err
	}
	machPath := filepath.Join(dir, "machine-predict.yaml")
	if err := os.WriteFile(machPath, mach, 0o644); err != nil {
		return 0, 0, nil, err
	}
	var arr strings.Builder
	for i, n := range c.Nodes {
		fmt.Fprintf(&arr, "%s %.6f\n", n.Name, arrivals[i])
	}
	arrPath := filepath.Join(dir, "arrivals.txt")
	if err := os.WriteFile(arrPath, []byte(arr.String()), 0o644); err != nil {
		return 0, 0, nil, err
	}
	nbp, err := os.Stat(files.NBP)
	if err != nil {
		return 0, 0, nil, err
	}
	rttD := time.Duration(rtt * float64(time.Second))
	argv = []string{bootctl, "simulate", "--topology", machPath, "--algo", algo, "--batch", "all", "--arrival", arrPath,
		"--files", fmt.Sprintf("nbp=%dB:tftp,kernel=%dB:http,initrd=%dB:http", nbp.Size(), files.Kernel, files.Initrd),
		"--blksize", "1468", "--rtt", rttD.String(), "--dhcp", "0s", "--health", (2 * rttD).String(), "--time-step", "0",
		"--fail", fail, "--detect", detect.String(), "-o", "json"}
	out, err := c.run.Run(ctx, argv...)
	if err != nil {
		return 0, 0, argv, err
	}
	var res struct {
		Runs []struct {
			Result struct {
				BatchSeconds float64 `json:"batch_seconds"`
				Failure      *struct {
					BatchSeconds         float64 `json:"batch_seconds"`
					BaselineBatchSeconds float64 `json:"baseline_batch_seconds"`
				} `json:"failure"`
			} `json:"result"`
		} `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return 0, 0, argv, fmt.Errorf("simulate output: %w", err)
	}
	if len(res.Runs) != 1 || res.Runs[0].Result.Failure == nil {
		return 0, 0, argv, fmt.Errorf("simulate output: want one run with a failure summary: %s", tail(out, 5))
	}
	r := res.Runs[0].Result
	return r.BatchSeconds, r.Failure.BaselineBatchSeconds, argv, nil
}

// DHCPAnswer is a DHCP answer (OFFER or ACK) a server logged.
type DHCPAnswer struct {
	Server, MAC, Outcome string
	// IP is the address offered or acknowledged.
	IP string
	At time.Time
}

// DHCPAnswers returns the answers every server logged since t (at debug level, each DHCP request
// is logged with its outcome: offered, acked, not_ours, ...), by time.
func (f *Fleet) DHCPAnswers(since time.Time) []DHCPAnswer {
	var out []DHCPAnswer
	for _, s := range f.Servers {
		for _, l := range f.LogLines(s.Name, "DHCP request", since) {
			oc, _ := l.Fields["outcome"].(string)
			mac, _ := l.Fields["mac"].(string)
			ip, _ := l.Fields["ip"].(string)
			if oc == "offered" || oc == "acked" {
				out = append(out, DHCPAnswer{Server: s.Name, MAC: mac, Outcome: oc, IP: ip, At: l.At})
			}
		}
	}
	slices.SortFunc(out, func(a, b DHCPAnswer) int { return a.At.Compare(b.At) })
	return out
}

// DoubleAnswers returns the pairs of answers to one MAC by two servers less than window apart:
// two servers answering one node at once.
func DoubleAnswers(ans []DHCPAnswer, window time.Duration) [][2]DHCPAnswer {
	last := map[string]DHCPAnswer{}
	var out [][2]DHCPAnswer
	for _, a := range ans {
		if p, ok := last[a.MAC]; ok && p.Server != a.Server && a.At.Sub(p.At) < window {
			out = append(out, [2]DHCPAnswer{p, a})
		}
		last[a.MAC] = a
	}
	return out
}

// LastOwnership returns the named server's latest "fleet ownership" log line since t, and whether
// there is one.
func (f *Fleet) LastOwnership(name string, since time.Time) (LogLine, bool) {
	lines := f.LogLines(name, "fleet ownership", since)
	if len(lines) == 0 {
		return LogLine{}, false
	}
	return lines[len(lines)-1], true
}

// Dead returns the dead servers a "fleet ownership" line names.
func (l LogLine) Dead() []string {
	var out []string
	dead, _ := l.Fields["dead"].([]any)
	for _, d := range dead {
		if s, ok := d.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
