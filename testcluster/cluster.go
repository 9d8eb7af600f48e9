package testcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/bootfabric/bootfabric/internal/atomicfile"
	"github.com/bootfabric/bootfabric/topology"
	"go.uber.org/zap"
	"golang.org/x/sync/errgroup"
)

// Spec describes a netns test cluster.
type Spec struct {
	// Name names the cluster; its namespaces are "bf-NAME-VERTEX". Lower-case letters and digits.
	Name    string
	Machine *topology.Machine
	// Scale multiplies every link capacity, so that the machine's segments can be shaped on one
	// host (e.g. 0.1).
	Scale float64
	// Subnet holds the cluster's addresses: servers from .0.1, nodes from .1.0 (a /16 or larger).
	Subnet netip.Prefix
	// StateDir keeps the state file (default /run/bootfabric).
	StateDir string
}

// MaxNamespaces bounds a cluster so that a large machine cannot exhaust the host; a 1,000-node
// storm with its servers and switches (TestStorm1000) fits. Each node costs a namespace, a veth pair
// and, while it boots, a few processes.
const MaxNamespaces = 1500

// Endpoint is a node or boot server of a running cluster.
type Endpoint struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	MAC       string `json:"mac"`
	IP        string `json:"ip"`
}

// State is what a cluster created, written before each thing is created so that Down can remove it
// after any failure or interrupt.
type State struct {
	Name       string            `json:"name"`
	Scale      float64           `json:"scale"`
	Machine    *topology.Machine `json:"machine"`
	PrefixLen  int               `json:"prefix_len"`
	Namespaces []string          `json:"namespaces"`
	Nodes      []Endpoint        `json:"nodes"`
	Servers    []Endpoint        `json:"servers"`
	// Pids are processes the cluster started on the host (boot servers), stopped by Down.
	Pids []int `json:"pids,omitempty"`
	// HostLinks are links the cluster made in the host's own namespace (a management bridge and
	// its veths, see AddMgmt), removed by Down.
	HostLinks []string `json:"host_links,omitempty"`
}

var clusterName = regexp.MustCompile(`^[a-z][a-z0-9]{0,11}$`)

// SpecError is a problem with what the user asked for (not with the host): a bad name or scale, a
// machine too large for one host, or a leftover cluster of the same name.
type SpecError struct{ Msg string }

func (e *SpecError) Error() string { return e.Msg }

func specErr(format string, args ...any) error { return &SpecError{fmt.Sprintf(format, args...)} }

// CheckSpec fills in defaults and checks spec, including that the machine fits on one host.
func CheckSpec(s *Spec) error {
	if err := s.defaults(); err != nil {
		return err
	}
	g, err := s.Machine.Build()
	if err != nil {
		return specErr("%v", err)
	}
	if g.NumVertices() > MaxNamespaces {
		return specErr("machine %s needs %d namespaces; a test cluster on one host is limited to %d", g.Name, g.NumVertices(), MaxNamespaces)
	}
	return nil
}

func (s *Spec) defaults() error {
	if !clusterName.MatchString(s.Name) {
		return specErr("cluster name %q: want 1-12 lower-case letters and digits, starting with a letter", s.Name)
	}
	if s.Machine == nil {
		return specErr("cluster: no machine")
	}
	if !(s.Scale > 0) || s.Scale > 1 {
		return specErr("scale %v: want a number in (0, 1]", s.Scale)
	}
	if !s.Subnet.IsValid() {
		s.Subnet = netip.MustParsePrefix("10.213.0.0/16")
	}
	if !s.Subnet.Addr().Is4() || s.Subnet.Bits() > 16 {
		return specErr("subnet %s: want an IPv4 prefix of /16 or larger", s.Subnet)
	}
	if s.StateDir == "" {
		s.StateDir = "/run/bootfabric"
	}
	return nil
}

// StatePath returns the state file of cluster name.
func StatePath(stateDir, name string) string {
	if stateDir == "" {
		stateDir = "/run/bootfabric"
	}
	return filepath.Join(stateDir, name+".json")
}

// Cluster is a running netns cluster.
type Cluster struct {
	State
	Graph *topology.Graph
	ns    []string // namespace of each vertex
	path  string
	run   runner
	log   *zap.Logger
	// accels is the VMs' accelerator settled in this process, per QEMUOptions.Accel as asked for.
	accels map[string]accelChoice

	// HTTPPort and StateDirs are for boot servers a test starts from a configuration of its own
	// instead of StartServers: the port BootVMs polls (0: 80) and each server's state directory by
	// name, where BootVMs reads the operator token (missing: DIR/state-NAME, as StartServers has).
	HTTPPort  int
	StateDirs map[string]string
}

// nsName returns the namespace of a vertex.
func nsName(cluster, vertex string) string { return "bf-" + cluster + "-" + vertex }

// nodeMAC gives node i a locally administered MAC.
func nodeMAC(i int) string {
	return fmt.Sprintf("02:bf:%02x:%02x:%02x:%02x", byte(i>>24), byte(i>>16), byte(i>>8), byte(i))
}

func addrAt(p netip.Prefix, off int) netip.Addr {
	a := p.Masked().Addr().As4()
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	v += uint32(off)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// Up builds the cluster. On any failure, or when ctx is cancelled, it removes what it created.
func Up(ctx context.Context, spec Spec, log *zap.Logger) (c *Cluster, err error) {
	return up(ctx, spec, log, execRunner{})
}

func up(ctx context.Context, spec Spec, log *zap.Logger, run runner) (c *Cluster, err error) {
	if err := CheckSpec(&spec); err != nil {
		return nil, err
	}
	g, err := spec.Machine.Build()
	if err != nil {
		return nil, err
	}
	path := StatePath(spec.StateDir, spec.Name)
	if err := checkNoLeftover(ctx, spec, path, run); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(spec.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("cluster state: %w", err)
	}
	c = newCluster(spec, g, path, run, log)
	defer func() {
		if err != nil {
			log.Warn("cluster up failed; removing what was created", zap.Error(err))
			if derr := c.Down(context.Background()); derr != nil {
				log.Error("cleanup after failed up", zap.Error(derr))
			}
			c = nil
		}
	}()
	start := time.Now()
	if err := c.hostLimits(ctx); err != nil {
		return c, err
	}
	if err := c.addNamespaces(ctx); err != nil {
		return c, err
	}
	if err := c.addLinks(ctx); err != nil {
		return c, err
	}
	linked := time.Now()
	if err := c.waitLinksUp(ctx); err != nil {
		return c, err
	}
	settle := time.Since(linked)
	for j, v := range g.Servers() {
		if _, err := c.ip(ctx, int(v), "addr", "add", c.Servers[j].IP+"/"+strconv.Itoa(spec.Subnet.Bits()), "brd", "+", "dev", "eth0"); err != nil {
			return c, err
		}
	}
	log.Info("cluster up", zap.String("name", spec.Name), zap.Int("namespaces", len(c.ns)), zap.Int("links", g.NumLinks()), zap.Duration("took", time.Since(start)),
		zap.Duration("links_settled_in", settle))
	return c, nil
}

// hostLimits raises the host's limits that a cluster of this size needs. They are the host's,
// shared by every namespace (a namespace cannot set its own), so they are raised, never lowered,
// and left raised: another cluster may be running.
//
//   - The neighbour tables: each node resolves the boot servers it talks to and each server the nodes
//     it answers, about 2 entries a node and up to 4 with a fleet's takeovers, while a fresh
//     machine's gc_thresh3 is 1024. Past it the kernel drops packets ("neighbor table overflow");
//     past gc_thresh2 it evicts entries still in use. Both tables are the host's, shared by every
//     namespace, and every node's interface sends IPv6 (router solicitations, MLD reports to
//     multicast groups, each an entry): the IPv6 one overflowed 800,000 times in a day of storms,
//     and a send that cannot make its entry fails with EINVAL in any namespace of the host (an
//     IPv6 test of the boot server beside a storm, ci24 and ci27).
//   - The receive backlog: a veth hands what it sends to the receiving CPU's one backlog queue, and a
//     switch floods each broadcast (a DISCOVER, an ARP request) to every port at once. With a fresh
//     machine's net.core.netdev_max_backlog of 1000, a 500-node DHCP storm lost hundreds of thousands
//     of packets there (the second column of /proc/net/softnet_stat), DHCP answers and TFTP blocks
//     among them, while the emulated links had room (issue 24).
func (c *Cluster) hostLimits(ctx context.Context) error {
	need := 4*len(c.Nodes) + 1024
	for _, lim := range []struct {
		key  string
		want int
	}{
		{"net.ipv4.neigh.default.gc_thresh3", 2 * need},
		{"net.ipv4.neigh.default.gc_thresh2", need},
		{"net.ipv6.neigh.default.gc_thresh3", 2 * need},
		{"net.ipv6.neigh.default.gc_thresh2", need},
		{"net.core.netdev_max_backlog", max(10000, 20*len(c.Nodes))},
	} {
		if err := c.raiseSysctl(ctx, lim.key, lim.want); err != nil {
			return err
		}
	}
	return nil
}

// raiseSysctl sets the host's sysctl key to want when it is lower.
func (c *Cluster) raiseSysctl(ctx context.Context, key string, want int) error {
	out, err := c.run.Run(ctx, "sysctl", "-n", key)
	if err != nil {
		return err
	}
	have, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return fmt.Errorf("sysctl %s: %q is not a number", key, out)
	}
	if have >= want {
		return nil
	}
	if _, err := c.run.Run(ctx, "sysctl", "-q", "-w", fmt.Sprintf("%s=%d", key, want)); err != nil {
		return err
	}
	c.log.Info("raised a host limit for the cluster", zap.String("sysctl", key), zap.Int("from", have), zap.Int("to", want))
	return nil
}

// checkNoLeftover refuses a cluster whose state file (path) or namespaces exist already.
func checkNoLeftover(ctx context.Context, spec Spec, path string, run runner) error {
	if _, err := os.Stat(path); err == nil {
		return specErr("cluster %q already exists (state %s); run `bootctl cluster down --name %s` first", spec.Name, path, spec.Name)
	}
	out, err := run.Run(ctx, "ip", "netns", "list")
	if err != nil {
		return fmt.Errorf("cluster: cannot list network namespaces (need root and iproute2): %w", err)
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, nsName(spec.Name, "")) {
			return specErr("cluster %q: namespace %s is left over from an earlier run; remove it with `ip netns del %s`", spec.Name, strings.Fields(line)[0], strings.Fields(line)[0])
		}
	}
	return nil
}

// newCluster lays out the cluster of spec on machine g, nothing created yet: a namespace per
// vertex, the servers' addresses from the subnet's .0.1 and the nodes' from .1.0, with their MACs.
func newCluster(spec Spec, g *topology.Graph, path string, run runner, log *zap.Logger) *Cluster {
	c := &Cluster{Graph: g, path: path, run: run, log: log, ns: make([]string, g.NumVertices())}
	c.State = State{Name: spec.Name, Scale: spec.Scale, Machine: spec.Machine, PrefixLen: spec.Subnet.Bits()}
	for v := range c.ns {
		c.ns[v] = nsName(spec.Name, g.VertexName(topology.VertexID(v)))
	}
	for j, v := range g.Servers() {
		c.Servers = append(c.Servers, Endpoint{Name: g.VertexName(v), Namespace: c.ns[v], MAC: fmt.Sprintf("02:bf:ff:00:%02x:%02x", byte(j>>8), byte(j)), IP: addrAt(spec.Subnet, 1+j).String()})
	}
	for i, v := range g.Nodes() {
		c.Nodes = append(c.Nodes, Endpoint{Name: g.VertexName(v), Namespace: c.ns[v], MAC: nodeMAC(i), IP: addrAt(spec.Subnet, 256+i).String()})
	}
	return c
}

// buildWorkers is how many namespaces are configured at once: the kernel's rtnl lock serializes
// much of it, but a batch's process start and parsing do not need it.
const buildWorkers = 4

// addNamespaces creates every vertex's namespace. All are recorded in the state before any is
// created, so that an interrupt at any point still cleans up; buildWorkers `ip -batch` processes
// create them side by side.
func (c *Cluster) addNamespaces(ctx context.Context) error {
	c.Namespaces = append(c.Namespaces, c.ns...)
	if err := c.save(); err != nil {
		return err
	}
	batches := make([]strings.Builder, buildWorkers)
	for i, ns := range c.ns {
		fmt.Fprintf(&batches[i%buildWorkers], "netns add %s\n", ns)
	}
	grp, gctx := errgroup.WithContext(ctx)
	for i := range batches {
		if batches[i].Len() > 0 {
			grp.Go(func() error {
				_, err := c.run.RunInput(gctx, batches[i].String(), "ip", "-batch", "-")
				return err
			})
		}
	}
	return grp.Wait()
}

// addLinks makes every link: the veth pairs in one `ip -batch` in the host's namespace (each end
// created inside its namespace), then each namespace's own settings in one `ip -batch` and one
// `tc -batch`, buildWorkers namespaces at a time. A 1,000-node cluster takes about 2,000
// processes instead of one per setting (about 4,500).
func (c *Cluster) addLinks(ctx context.Context) error {
	g := c.Graph
	ipCmds, tcCmds := make([]strings.Builder, len(c.ns)), make([]strings.Builder, len(c.ns))
	for v := range c.ns {
		ipCmds[v].WriteString("link set lo up\n")
		if g.Kind(topology.VertexID(v)) == topology.Switch {
			// A bridge without spanning tree or forwarding delay.
			ipCmds[v].WriteString("link add br0 type bridge forward_delay 0 stp_state 0\nlink set br0 up\n")
		}
	}
	var veths strings.Builder
	for l := range g.NumLinks() {
		lk := g.Link(topology.LinkID(l))
		a, b := lk.A, lk.B
		ia, ib := c.ifName(topology.LinkID(l), a), c.ifName(topology.LinkID(l), b)
		fmt.Fprintf(&veths, "link add %s netns %s type veth peer name %s netns %s\n", ia, c.ns[a], ib, c.ns[b])
		if i, ok := c.nodeIndex(a); ok {
			fmt.Fprintf(&ipCmds[a], "link set %s address %s\n", ia, c.Nodes[i].MAC)
		}
		for _, end := range [2]struct {
			v   topology.VertexID
			dev string
		}{{a, ia}, {b, ib}} {
			if g.Kind(end.v) == topology.Switch {
				fmt.Fprintf(&ipCmds[end.v], "link set %s master br0\n", end.dev)
			}
			fmt.Fprintf(&ipCmds[end.v], "link set %s up\n", end.dev)
			tcCmds[end.v].WriteString(shapeCmd(end.dev, lk.CapacityMbps*c.Scale))
		}
	}
	if _, err := c.run.RunInput(ctx, veths.String(), "ip", "-batch", "-"); err != nil {
		return err
	}
	grp, gctx := errgroup.WithContext(ctx)
	grp.SetLimit(buildWorkers)
	for v := range c.ns {
		grp.Go(func() error {
			if _, err := c.run.RunInput(gctx, ipCmds[v].String(), "ip", "-n", c.ns[v], "-batch", "-"); err != nil {
				return err
			}
			if tcCmds[v].Len() == 0 {
				return nil
			}
			_, err := c.run.RunInput(gctx, tcCmds[v].String(), "tc", "-n", c.ns[v], "-batch", "-")
			return err
		})
	}
	return grp.Wait()
}

// ifName names the interface of link l at vertex v: endpoints have eth0, a switch has up0 towards
// its parent and pN on its port N.
func (c *Cluster) ifName(l topology.LinkID, v topology.VertexID) string {
	lk := c.Graph.Link(l)
	if c.Graph.Kind(v) != topology.Switch {
		return "eth0"
	}
	if lk.A == v {
		return "up0"
	}
	return "p" + strconv.Itoa(int(lk.PortB))
}

// ip runs `ip -n NS args...` in vertex v's namespace.
func (c *Cluster) ip(ctx context.Context, v int, args ...string) (string, error) {
	return c.run.Run(ctx, append([]string{"ip", "-n", c.ns[v]}, args...)...)
}

// shapeCmd is the tc command that limits the egress of interface dev to rateMbps with a token
// bucket. The burst must hold a whole GSO super-packet (veth hands tbf up to 64 KiB at once) or
// tbf would have to split it. The queue holds a second of traffic (at most 32 MiB) so that the
// links are lossless: a drop would make TCP resend bytes that the model does not count.
func shapeCmd(dev string, rateMbps float64) string {
	rateBit := int64(math.Round(rateMbps * 1e6))
	burst := max(int64(65536+1514), rateBit/8/250)
	limit := min(max(burst*2, rateBit/8), 32<<20)
	return fmt.Sprintf("qdisc replace dev %s root tbf rate %dbit burst %d limit %d\n", dev, rateBit, burst, limit)
}

func (c *Cluster) nodeIndex(v topology.VertexID) (int, bool) {
	nodes := c.Graph.Nodes()
	if len(nodes) == 0 || v < nodes[0] || v > nodes[len(nodes)-1] {
		return 0, false
	}
	return int(v - nodes[0]), c.Graph.Kind(v) == topology.Node
}

func (c *Cluster) save() error {
	data, err := json.MarshalIndent(c.State, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(c.path, data, 0o644); err != nil {
		return fmt.Errorf("cluster state: %w", err)
	}
	return nil
}

// AddPid records a host process that Down must stop.
func (c *Cluster) AddPid(pid int) error {
	c.Pids = append(c.Pids, pid)
	return c.save()
}

// Open returns the running cluster recorded in the state file.
func Open(stateDir, name string, log *zap.Logger) (*Cluster, error) {
	path := StatePath(stateDir, name)
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("no cluster named %q (no state file %s)", name, path)
		}
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("cluster state %s: %w", path, err)
	}
	c := &Cluster{State: st, path: path, run: execRunner{}, log: log}
	if st.Machine != nil {
		if c.Graph, err = st.Machine.Build(); err != nil {
			return nil, fmt.Errorf("cluster state %s: %w", path, err)
		}
		c.ns = make([]string, c.Graph.NumVertices())
		for v := range c.ns {
			c.ns[v] = nsName(name, c.Graph.VertexName(topology.VertexID(v)))
		}
	}
	return c, nil
}

// Down stops the cluster's processes and removes its namespaces (which removes every veth, bridge
// and qdisc in them), then its state file. It only touches what the state file records.
func (c *Cluster) Down(ctx context.Context) error {
	for _, pid := range c.Pids {
		stopPid(pid)
	}
	errs := c.deleteNamespaces(ctx)
	errs = append(errs, c.deleteHostLinks(ctx)...)
	// The working directory (configs, image store, logs) goes too; the path is ours by construction.
	if err := os.RemoveAll(strings.TrimSuffix(c.path, ".json")); err != nil {
		errs = append(errs, err)
	}
	if err := os.Remove(c.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// deleteNamespaces deletes the recorded namespaces that exist, last created first, after stopping
// the processes still inside (clients, servers: the cluster's).
func (c *Cluster) deleteNamespaces(ctx context.Context) []error {
	existing := map[string]bool{}
	if out, err := c.run.Run(ctx, "ip", "netns", "list"); err == nil {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 {
				existing[f[0]] = true
			}
		}
	}
	var gone []string
	for i := len(c.Namespaces) - 1; i >= 0; i-- {
		if existing[c.Namespaces[i]] {
			gone = append(gone, c.Namespaces[i])
		}
	}
	if len(gone) == 0 {
		return nil
	}
	// The processes left in them first, buildWorkers namespaces at a time; then one batch deletes
	// them all (-force: one that fails does not keep the others).
	var grp errgroup.Group
	grp.SetLimit(buildWorkers)
	for _, ns := range gone {
		grp.Go(func() error {
			if out, err := c.run.Run(ctx, "ip", "netns", "pids", ns); err == nil {
				for _, f := range strings.Fields(out) {
					if pid, err := strconv.Atoi(f); err == nil {
						stopPid(pid)
					}
				}
			}
			return nil
		})
	}
	_ = grp.Wait()
	var b strings.Builder
	for _, ns := range gone {
		fmt.Fprintf(&b, "netns del %s\n", ns)
	}
	if _, err := c.run.RunInput(ctx, b.String(), "ip", "-force", "-batch", "-"); err != nil {
		return []error{err}
	}
	return nil
}

// deleteHostLinks deletes the recorded host links that remain: those whose other end was in a
// namespace went with it (or are going: namespaces are cleaned up in the background); the rest
// (a bridge) go now.
func (c *Cluster) deleteHostLinks(ctx context.Context) []error {
	var errs []error
	for i := len(c.HostLinks) - 1; i >= 0; i-- {
		if _, err := c.run.Run(ctx, "ip", "link", "show", "dev", c.HostLinks[i]); err != nil {
			continue
		}
		if _, err := c.run.Run(ctx, "ip", "link", "del", "dev", c.HostLinks[i]); err != nil {
			// A veth whose other end was in a namespace goes with it, and the kernel finishes a
			// deleted namespace's cleanup in the background: gone between show and del is gone.
			if _, gone := c.run.Run(ctx, "ip", "link", "show", "dev", c.HostLinks[i]); gone == nil {
				errs = append(errs, err)
			}
		}
	}
	return errs
}

// stopPid sends SIGTERM, then SIGKILL after a grace period.
func stopPid(pid int) {
	if pid <= 1 {
		return
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return
	}
	for i := 0; i < 20; i++ {
		time.Sleep(50 * time.Millisecond)
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
}
