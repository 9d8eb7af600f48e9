package fabricsim

import (
	"fmt"
	"math"
	"strings"
)

// Protocol is how a file is delivered; it decides the per-flow cap.
type Protocol uint8

const (
	// TFTP is lock-step: at most windowsize blocks of blksize bytes per round trip.
	TFTP Protocol = iota
	// HTTP over TCP: at most one receive window per round trip.
	HTTP
	// Uncapped delivery: only the links limit the flow (for comparisons with the analytic model).
	Uncapped
)

func (p Protocol) String() string {
	switch p {
	case TFTP:
		return "tftp"
	case HTTP:
		return "http"
	case Uncapped:
		return "none"
	}
	return fmt.Sprintf("protocol(%d)", uint8(p))
}

// MarshalText writes the protocol's name.
func (p Protocol) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a protocol's name.
func (p *Protocol) UnmarshalText(b []byte) error {
	v, err := ParseProtocol(string(b))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// ParseProtocol parses tftp, http or none.
func ParseProtocol(s string) (Protocol, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "tftp":
		return TFTP, nil
	case "http":
		return HTTP, nil
	case "none":
		return Uncapped, nil
	}
	return 0, fmt.Errorf("unknown protocol %q: want tftp, http or none", s)
}

// File is one file a node fetches during its boot, in order.
type File struct {
	Name     string   `json:"name"`
	Bytes    float64  `json:"bytes"`
	Protocol Protocol `json:"protocol"`
}

// Defaults of FlowConfig, documented in docs/plan.md.
const (
	// DefaultNBPBytes is undionly.kpxe, the iPXE network boot program, about 70 KB.
	DefaultNBPBytes = 70e3
	// DefaultKernelBytes and DefaultInitrdBytes add up to the paper's 50 MB image.
	DefaultKernelBytes = 10e6
	DefaultInitrdBytes = 40e6
	// DefaultDHCPSeconds is one DHCP exchange (DISCOVER, OFFER, REQUEST, ACK) including the PXE
	// ROM's own delays.
	DefaultDHCPSeconds = 1.0
	// DefaultHealthSeconds is the health report after the last file.
	DefaultHealthSeconds = 0.1
	// DefaultTFTPBlockSize is what iPXE and most PXE ROMs negotiate on a 1500-byte MTU.
	DefaultTFTPBlockSize = 1432
	// DefaultTFTPWindowSize is 1: PXE ROMs do not implement RFC 7440 windows.
	DefaultTFTPWindowSize = 1
	// DefaultHTTPWindowBytes is a 256 KiB TCP receive window.
	DefaultHTTPWindowBytes = 256 << 10
	// DefaultServerSeconds is the server's time per exchange (one TFTP block or HTTP window).
	DefaultServerSeconds = 100e-6
)

// DefaultFiles returns the default boot: undionly.kpxe over TFTP (PXE firmware speaks nothing
// else), then a 10 MB kernel and a 40 MB initrd over proto.
func DefaultFiles(proto Protocol) []File {
	return []File{
		{Name: "nbp", Bytes: DefaultNBPBytes, Protocol: TFTP},
		{Name: "kernel", Bytes: DefaultKernelBytes, Protocol: proto},
		{Name: "initrd", Bytes: DefaultInitrdBytes, Protocol: proto},
	}
}

// FlowConfig is what a simulation needs besides the machine, the mapping and the batch.
type FlowConfig struct {
	// Files are fetched in order by every node.
	Files []File
	// DHCPSeconds is the fixed time of the DHCP exchange before the first file.
	DHCPSeconds float64
	// HealthSeconds is the fixed time of the health report after the last file.
	HealthSeconds float64
	// TFTPBlockSize (bytes) and TFTPWindowSize (blocks) set the TFTP cap.
	TFTPBlockSize, TFTPWindowSize int
	// HTTPWindowBytes sets the HTTP cap.
	HTTPWindowBytes float64
	// ServerSeconds is added to each round trip for the server's processing.
	ServerSeconds float64
	// RTTSeconds, when positive, replaces the round trip computed from the route's latencies.
	RTTSeconds float64
	// ServerCapMbps, when positive, limits each boot server's total rate (disk or CPU).
	ServerCapMbps float64
	// Arrivals gives each batch node's power-on time in seconds (parallel to the batch); nil: all
	// at 0.
	Arrivals []float64
	// Admit, when set, powers the nodes on as the simulation runs, from what has finished
	// (Arrivals must be nil; not with server failures).
	Admit Admitter
	// TimeStep, when positive, rounds every event up to a multiple of it, so that arrivals and
	// completions within one step share one re-allocation: arrivals are seen late and a flow that
	// ends inside a step keeps its share to the step's end, so each event is off by less than one
	// step. 0: exact, the default; the incremental solver makes an exact power-on ramp (an event
	// per arrival and per completion) cheap, so a step is only an optional coarsening.
	TimeStep float64
	// MaxSamples bounds the length of the utilisation series (0: 400).
	MaxSamples int
	// TopLinks is how many of the busiest links to list (0: 10).
	TopLinks int
	// Progress, when set, is called every progressEvery events and once at the end, from the
	// simulating goroutine: often enough for a progress bar (an event costs microseconds to a
	// millisecond), rarely enough to cost little in the event loop (a call sums the active
	// groups).
	Progress func(Progress)

	// reference, set by tests and benchmarks, re-solves the whole allocation at every event over
	// every shared channel, as the simulator did before it re-solved incrementally: the anchor
	// the incremental solver is checked and timed against.
	reference bool
}

// progressEvery is how many events pass between two FlowConfig.Progress calls.
const progressEvery = 32

// Progress is what FlowConfig.Progress is told: nodes done of all, the simulated time, and the
// megabits fetched of all the nodes' files. Nodes finish in a burst near the end, so a progress
// bar follows the megabits, which grow with the work from the start (restarts after server
// failures fetch again, so Mb may pass TotalMb).
type Progress struct {
	Done, Nodes int
	Seconds     float64
	Mb, TotalMb float64
}

// DefaultFlowConfig returns the documented defaults with kernel and initrd over proto.
func DefaultFlowConfig(proto Protocol) FlowConfig {
	return FlowConfig{
		Files:           DefaultFiles(proto),
		DHCPSeconds:     DefaultDHCPSeconds,
		HealthSeconds:   DefaultHealthSeconds,
		TFTPBlockSize:   DefaultTFTPBlockSize,
		TFTPWindowSize:  DefaultTFTPWindowSize,
		HTTPWindowBytes: DefaultHTTPWindowBytes,
		ServerSeconds:   DefaultServerSeconds,
	}
}

// RampArrivals returns the arrival times of n nodes powered on at perSecond nodes per second.
func RampArrivals(n int, perSecond float64) ([]float64, error) {
	if !(perSecond > 0) || math.IsInf(perSecond, 1) {
		return nil, fmt.Errorf("ramp: rate must be a positive number of nodes per second, got %v", perSecond)
	}
	out := make([]float64, n)
	for i := range out {
		out[i] = float64(i) / perSecond
	}
	return out, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// check validates the configuration for a batch of n nodes.
func (c *FlowConfig) check(n int) error {
	seen := map[string]bool{}
	for i, f := range c.Files {
		if f.Name == "" {
			return fmt.Errorf("file %d: name is empty", i+1)
		}
		if seen[f.Name] {
			return fmt.Errorf("file %q: named twice", f.Name)
		}
		seen[f.Name] = true
		if !finite(f.Bytes) || f.Bytes < 0 {
			return fmt.Errorf("file %q: size must be a non-negative number of bytes, got %v", f.Name, f.Bytes)
		}
		if f.Protocol > Uncapped {
			return fmt.Errorf("file %q: unknown protocol %d", f.Name, f.Protocol)
		}
	}
	for _, v := range []struct {
		name string
		v    float64
	}{{"DHCP time", c.DHCPSeconds}, {"health report time", c.HealthSeconds}, {"server time", c.ServerSeconds},
		{"RTT", c.RTTSeconds}, {"server cap", c.ServerCapMbps}, {"time step", c.TimeStep}, {"HTTP window", c.HTTPWindowBytes}} {
		if !finite(v.v) || v.v < 0 {
			return fmt.Errorf("%s must be a non-negative number, got %v", v.name, v.v)
		}
	}
	if err := c.checkProtocols(); err != nil {
		return err
	}
	return c.checkArrivals(n)
}

// uses reports whether some file with data goes over protocol p.
func (c *FlowConfig) uses(p Protocol) bool {
	for _, f := range c.Files {
		if f.Protocol == p && f.Bytes > 0 {
			return true
		}
	}
	return false
}

// checkProtocols validates the parameters of the protocols the files use.
func (c *FlowConfig) checkProtocols() error {
	if c.uses(TFTP) {
		// RFC 2348 and RFC 7440 ranges.
		if c.TFTPBlockSize < 8 || c.TFTPBlockSize > 65464 {
			return fmt.Errorf("TFTP block size must be 8..65464 bytes, got %d", c.TFTPBlockSize)
		}
		if c.TFTPWindowSize < 1 || c.TFTPWindowSize > 65535 {
			return fmt.Errorf("TFTP window size must be 1..65535 blocks, got %d", c.TFTPWindowSize)
		}
	}
	if c.uses(HTTP) && !(c.HTTPWindowBytes > 0) {
		return fmt.Errorf("HTTP window must be positive, got %v", c.HTTPWindowBytes)
	}
	return nil
}

// checkArrivals validates the arrival times, if any, of a batch of n nodes.
func (c *FlowConfig) checkArrivals(n int) error {
	if c.Admit != nil && c.Arrivals != nil {
		return fmt.Errorf("arrivals: give either fixed arrival times or an admitter, not both")
	}
	if c.Arrivals == nil {
		return nil
	}
	if len(c.Arrivals) != n {
		return fmt.Errorf("arrivals: %d times for %d nodes", len(c.Arrivals), n)
	}
	for i, t := range c.Arrivals {
		if !finite(t) || t < 0 {
			return fmt.Errorf("arrivals: time %v of batch node %d must be a non-negative number of seconds", t, i)
		}
	}
	return nil
}
