package bootrun

import (
	"fmt"
	"math"
)

// Phase is where a node of a run is.
type Phase uint8

// Phases in boot order.
const (
	// Queued: not powered on yet (or waiting to be retried).
	Queued Phase = iota
	// Powering: power-on with a one-time network boot asked of its BMC.
	Powering
	// Firmware: the BMC answered; the node's firmware has not asked for an address yet.
	Firmware
	// Loading: the node asked for an address and is fetching its boot files.
	Loading
	// Booted: the node has its files (its kernel runs); its health report is awaited.
	Booted
	// Healthy: the node reported healthy.
	Healthy
	// Failed: the run gave up on the node (its Class says why).
	Failed
	numPhases
)

var phaseNames = [numPhases]string{"queued", "powering", "firmware", "loading", "booted", "healthy", "failed"}

func (p Phase) String() string {
	if p < numPhases {
		return phaseNames[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// MarshalText names the phase in JSON.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a phase's name.
func (p *Phase) UnmarshalText(b []byte) error {
	for i, n := range phaseNames {
		if n == string(b) {
			*p = Phase(i)
			return nil
		}
	}
	return fmt.Errorf("unknown run phase %q", b)
}

// Class says why a node's attempt failed.
type Class string

// Failure classes: the BMC's (from power.Classify), then the boot's.
const (
	BMCUnreachable Class = "bmc-unreachable"
	BMCAuth        Class = "bmc-auth"
	BMCBusy        Class = "bmc-busy"
	BMCTimeout     Class = "bmc-timeout"
	BMCError       Class = "bmc-error"
	NoDHCP         Class = "no-dhcp"        // powered on, never asked for an address
	StuckTransfer  Class = "stuck-transfer" // asked for an address, never had its files
	NoHealth       Class = "no-health"      // had its files, never reported healthy
	ReportedFailed Class = "reported-failed"
	Aborted        Class = "aborted"
	// Congested: the run powered the node off to relieve its link (its limit was cut below the
	// nodes in flight behind it, and the node was missing the firmware's patience). It is
	// queued again and the attempt does not count against MaxAttempts.
	Congested Class = "congested"
)

// EventKind is what happened.
type EventKind uint8

// Events.
const (
	// PowerAnswered: the BMC answered a PowerOn or Cycle (Class empty: it did it).
	PowerAnswered EventKind = iota
	// Observed: the boot servers saw the node reach Phase (Loading, Booted, Healthy) in the
	// current attempt, or fail (Failed).
	Observed
	// Tick: time passed (deadlines are checked on every event).
	Tick
	// Pause, Resume and Abort come from the operator.
	Pause
	Resume
	Abort
	// Transfer: the node's current file transfer as its boot server measures it (Bytes of
	// Size after Seconds; Done once it is whole).
	Transfer
	// GaveUp: the node's firmware gave up a transfer after Seconds (it starts over by itself).
	GaveUp
	// Restarted: the node's firmware started its boot over from DHCP by itself.
	Restarted
)

// Event is one input of the controller.
type Event struct {
	Kind  EventKind
	Node  int
	Phase Phase
	Class Class
	// Bytes, Size and Seconds measure a Transfer (Seconds also a GaveUp); Done: it is whole.
	Bytes, Size int64
	Seconds     float64
	Done        bool
	// Ago dates an Observed phase: it began this many seconds before the event, as the servers
	// measured it (0: at the event). The record takes that time, within the phase before it;
	// deadlines still run from the event.
	Ago float64
}

// ActionKind is what the controller asks for.
type ActionKind uint8

// Actions.
const (
	// PowerOn: set the node's next boot to the network, then power it on.
	PowerOn ActionKind = iota
	// Cycle: set the node's next boot to the network, then power cycle it (a retry).
	Cycle
	// GiveUp: the node failed for good; Class says why.
	GiveUp
	// Paused: admission stopped; Reason says why.
	Paused
	// Finished: every node is healthy or failed.
	Finished
	// PowerOff: power the node off; the run evicted it from a congested link (Class
	// Congested) and will power it on again.
	PowerOff
	// Resumed: admission goes on after a back-off (Reason says why it stopped).
	Resumed
)

var actionNames = [...]string{"power-on", "cycle", "give-up", "paused", "finished", "power-off", "resumed"}

func (k ActionKind) String() string { return actionNames[k] }

// Action is one output of the controller.
type Action struct {
	Kind    ActionKind
	Node    int
	Attempt int
	Class   Class
	Reason  string
}

// Expect is how long each phase should take, in seconds: the prediction a deadline is made of.
type Expect struct {
	Power    float64 // the BMC's answer
	Firmware float64 // from power-on to the first DHCP request
	Transfer float64 // from the DHCP request to the last boot file
	Health   float64 // from the last boot file to the health report
}

// Config bounds a run. The zero value of a field takes its default.
type Config struct {
	// Caps[r] is how many nodes holding resource r may be in flight (powered and not yet
	// booted) at once; a node holds the resources Node.Resources names.
	Caps []int
	// MaxInFlight caps the nodes in flight in all (0: no cap but Caps).
	MaxInFlight int
	// Expect and Factor, Margin make each phase's deadline: Factor*Expect+Margin seconds.
	// Factor +Inf: no deadlines (a simulation, where nothing is late).
	Expect Expect
	Factor float64 // default 3
	Margin float64 // default 30 s
	// MaxAttempts bounds the power-ons of one node (default 3).
	MaxAttempts int
	// RetryDelay is how long a failed node waits before it is queued again (default 5 s): a
	// BMC that did not answer is not asked again at once.
	RetryDelay float64
	Breaker    BreakerConfig
	// Patience is the firmware's patience with one file, in seconds, until the run learns it
	// from the transfers it sees complete and given up (0: Expect.Transfer, or 60 s).
	Patience float64
	// Decrease is the factor a link's limit is cut by (default 0.5).
	Decrease float64
	// CapacityMbps, when given, is each resource's capacity (parallel to Caps; 0: unknown).
	// Once the run has learned the firmware's patience from a transfer given up, a limit never
	// goes above the nodes that each get the largest file within it (Limits.CapacityMbps).
	CapacityMbps []float64
	// FilesMb is one node's boot files in megabits (the profile's kernel and initrd): with
	// CapacityMbps, the time they take alone on a link, the least gap between two power-ons
	// behind it (0: no such gap).
	FilesMb float64
}

// Node is one node of a run.
type Node struct {
	Name string
	// Resources are the indices into Config.Caps of the capacities the node's boot takes:
	// its boot server's and each bottleneck segment's on its route. Nodes with the same
	// resources are interchangeable to admission and are interleaved with the others.
	Resources []int32
}

// NodeRecord is what the run knows of one node.
type NodeRecord struct {
	Name     string  `json:"name"`
	Phase    Phase   `json:"phase"`
	Attempts int     `json:"attempts"`
	Class    Class   `json:"class,omitempty"`
	Skipped  bool    `json:"skipped,omitempty"` // healthy before the run: never powered
	PowerAt  float64 `json:"power_at"`          // seconds from the run's start; the last attempt's
	LoadAt   float64 `json:"load_at"`
	BootAt   float64 `json:"booted_at"`
	HealthAt float64 `json:"healthy_at"`
	// Failures lists the class of each failed attempt, in order.
	Failures []Class `json:"failures,omitempty"`
}

func (c *Config) defaults() {
	if c.Factor == 0 {
		c.Factor = 3
	}
	if c.Margin == 0 {
		c.Margin = 30
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 3
	}
	if c.RetryDelay == 0 {
		c.RetryDelay = 5
	}
	if c.Patience == 0 {
		c.Patience = c.Expect.Transfer
	}
	if c.Patience == 0 {
		c.Patience = DefaultTransferSeconds
	}
	if c.Decrease == 0 {
		c.Decrease = 0.5
	}
	c.Breaker.defaults()
}

func (c *Config) check(nodes []Node) error {
	if err := c.checkNumbers(); err != nil {
		return err
	}
	for r, v := range c.Caps {
		if v < 1 {
			return fmt.Errorf("resource %d: cap %d: want at least 1", r, v)
		}
	}
	if len(c.CapacityMbps) != 0 && len(c.CapacityMbps) != len(c.Caps) {
		return fmt.Errorf("%d capacities for %d resources", len(c.CapacityMbps), len(c.Caps))
	}
	for r, v := range c.CapacityMbps {
		if !(v >= 0) || math.IsInf(v, 0) {
			return fmt.Errorf("resource %d: capacity %v Mb/s: want a non-negative number", r, v)
		}
	}
	for i, n := range nodes {
		for _, r := range n.Resources {
			if r < 0 || int(r) >= len(c.Caps) {
				return fmt.Errorf("node %s (%d): resource %d of %d", n.Name, i, r, len(c.Caps))
			}
		}
	}
	return c.Breaker.check()
}

// checkNumbers checks the scalar settings: each a finite number in its range.
func (c *Config) checkNumbers() error {
	if !(c.Factor > 0) || !(c.Margin >= 0) || math.IsInf(c.Margin, 0) {
		return fmt.Errorf("deadline factor %v and margin %v: want a positive factor and a finite margin", c.Factor, c.Margin)
	}
	if !(c.RetryDelay >= 0) || math.IsInf(c.RetryDelay, 0) {
		return fmt.Errorf("retry delay %v: want a non-negative number of seconds", c.RetryDelay)
	}
	if !(c.Patience > 0) || math.IsInf(c.Patience, 0) || !(c.Decrease > 0 && c.Decrease < 1) {
		return fmt.Errorf("patience %v s and decrease %v: want a positive, finite patience and a decrease in (0,1)", c.Patience, c.Decrease)
	}
	if c.MaxAttempts < 1 || c.MaxInFlight < 0 {
		return fmt.Errorf("max attempts %d and max in flight %d: want at least 1 and 0", c.MaxAttempts, c.MaxInFlight)
	}
	if !(c.FilesMb >= 0) || math.IsInf(c.FilesMb, 0) {
		return fmt.Errorf("boot files of %v Mb: want a non-negative, finite size", c.FilesMb)
	}
	return nil
}
