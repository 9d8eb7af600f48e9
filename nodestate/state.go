package nodestate

import (
	"encoding/json"
	"fmt"
)

// State is a node's boot state.
type State uint8

// Boot states in boot order. Failed is ranked last but is left by any forward event (a retried
// transfer that succeeds) and by a new DHCP discover.
const (
	// Pending: nothing seen from the node yet (since the server first knew it).
	Pending State = iota
	// Discover: a DHCP DISCOVER arrived; a new boot attempt began.
	Discover
	// Offered: this server sent a DHCP OFFER.
	Offered
	// Bound: this server acknowledged the address (DHCP ACK).
	Bound
	// NBP: the network bootstrap program was delivered (a TFTP boot file, or the iPXE script,
	// which shows that iPXE is running).
	NBP
	// Kernel: the profile's kernel was delivered.
	Kernel
	// Initrd: the profile's initrd was delivered.
	Initrd
	// Booted: the booted kernel asked for its address (a DHCP DISCOVER after kernel or initrd).
	Booted
	// Healthy: the node reported status ok.
	Healthy
	// Failed: the node reported status failed, or a transfer of its boot failed.
	Failed
	numStates
)

var stateNames = [numStates]string{"pending", "discover", "offered", "bound", "nbp", "kernel", "initrd", "booted", "healthy", "failed"}

// States returns every state in boot order.
func States() []State {
	out := make([]State, numStates)
	for i := range out {
		out[i] = State(i)
	}
	return out
}

func (s State) String() string {
	if s < numStates {
		return stateNames[s]
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// ParseState returns the state with the given name.
func ParseState(name string) (State, error) {
	for i, n := range stateNames {
		if n == name {
			return State(i), nil
		}
	}
	return 0, fmt.Errorf("unknown boot state %q", name)
}

// MarshalText implements encoding.TextMarshaler (JSON uses the name).
func (s State) MarshalText() ([]byte, error) {
	if s >= numStates {
		return nil, fmt.Errorf("invalid boot state %d", uint8(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (s *State) UnmarshalText(b []byte) error {
	v, err := ParseState(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// Event is something that happened to a node's boot.
type Event uint8

// Events, as the DHCP and TFTP observers and the HTTP handlers report them.
const (
	// EvDiscover: a DHCP DISCOVER from the node.
	EvDiscover Event = iota + 1
	// EvOffer: this server sent an OFFER.
	EvOffer
	// EvAck: this server sent an ACK.
	EvAck
	// EvNBP: a boot file other than the kernel and initrd was delivered (TFTP or HTTP).
	EvNBP
	// EvScript: the node's iPXE script was fetched.
	EvScript
	// EvKernel: the node's kernel was delivered.
	EvKernel
	// EvInitrd: the node's initrd was delivered.
	EvInitrd
	// EvProbe: a transfer was aborted right after option negotiation (the UEFI tsize probe).
	EvProbe
	// EvTransferFailed: a transfer for the node failed (timeout, abort) after it began.
	EvTransferFailed
	// EvHealthOK and EvHealthFailed: the node reported in.
	EvHealthOK
	EvHealthFailed
	// EvRebootDiscover: a DHCP DISCOVER from a node the operator asked to reboot (or from any node
	// with reset_on_discover): unlike EvDiscover it starts a new attempt from booted and healthy.
	EvRebootDiscover
	// EvTransferRefused: a TFTP request for the node's address that could not start (a missing
	// file, a refused request). A host on the boot network can send one from any address (UDP),
	// and no data ever reached the node, so it is recorded and moves nothing.
	EvTransferRefused
	// EvPowerOff: the operator powered the node off (bootctl power off told its server). What
	// the node was, healthy or mid-boot, is over: it is pending again until its next DISCOVER.
	EvPowerOff
	numEvents
)

var eventNames = [numEvents]string{"", "dhcp-discover", "dhcp-offer", "dhcp-ack", "nbp", "ipxe-script", "kernel", "initrd", "tftp-probe", "transfer-failed", "health-ok", "health-failed", "dhcp-discover-reboot", "transfer-refused", "power-off"}

func (e Event) String() string {
	if e > 0 && e < numEvents {
		return eventNames[e]
	}
	return fmt.Sprintf("event(%d)", uint8(e))
}

// MarshalJSON writes the event's name.
func (e Event) MarshalJSON() ([]byte, error) { return json.Marshal(e.String()) }

// UnmarshalJSON reads an event's name.
func (e *Event) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	for i, n := range eventNames {
		if i > 0 && n == s {
			*e = Event(i)
			return nil
		}
	}
	return fmt.Errorf("unknown boot event %q", s)
}

// Next is the boot state machine: the state a node in state cur moves to on event ev, and whether
// that is a transition. It is pure; Tracker applies it.
//
// Forward events (offer, ack, nbp, script, kernel, initrd) only move forward in boot order, so that
// the DHCP exchanges iPXE and the booted kernel make do not undo progress, and they also leave
// Failed (a retry that worked). A DISCOVER starts a new boot attempt, except while the NBP or the
// kernel is being loaded (iPXE asks for its own address then) and right after the kernel or initrd
// was delivered, where it shows the kernel has booted. From booted and healthy a DISCOVER is only
// an event: anyone on the boot network can send one with the node's MAC, so it takes the operator's
// word (EvRebootDiscover, after bootctl node reboot) to start those nodes over. A tsize probe
// changes nothing.
func Next(cur State, ev Event) (State, bool) {
	switch ev {
	case EvDiscover, EvRebootDiscover:
		return nextOnDiscover(cur, ev)
	case EvOffer:
		return forward(cur, Offered)
	case EvAck:
		return forward(cur, Bound)
	case EvNBP, EvScript:
		return forward(cur, NBP)
	case EvKernel:
		return forward(cur, Kernel)
	case EvInitrd:
		return forward(cur, Initrd)
	case EvProbe:
		return cur, false
	case EvPowerOff:
		return move(cur, Pending)
	case EvTransferFailed:
		if cur >= Booted {
			// A booted node's stray transfer says nothing about its boot.
			return cur, false
		}
		return move(cur, Failed)
	case EvHealthOK:
		return move(cur, Healthy)
	case EvHealthFailed:
		return move(cur, Failed)
	}
	return cur, false
}

// nextOnDiscover is Next for a DISCOVER (ev is EvDiscover or EvRebootDiscover) about which
// nothing more is known.
func nextOnDiscover(cur State, ev Event) (State, bool) {
	return NextOnDiscover(cur, ev, Discovery{})
}

// Client is the kind of DHCP client that sent a DISCOVER, as the DHCP server classified it.
type Client uint8

const (
	// ClientUnknown: not said (the rules of Next alone apply).
	ClientUnknown Client = iota
	// ClientOS: a plain DHCP client, such as the booted system's.
	ClientOS
	// ClientFirmware: PXE or UEFI HTTP boot firmware (vendor class PXEClient or HTTPClient).
	ClientFirmware
	// ClientIPXE: iPXE (its user class).
	ClientIPXE
)

// Discovery is what is known of a DISCOVER besides the node's state.
type Discovery struct {
	From Client
	// Armed: the operator asked for the node's reboot (RebootRequested).
	Armed bool
}

// NextOnDiscover is the state a node in state cur moves to on a DISCOVER, knowing d.
//
// An armed reboot wins over every state: the operator's word starts the attempt over, so that a
// node stuck mid-boot can be rebooted. Otherwise a DISCOVER mid-boot moves no attempt: anyone on
// the boot network can send one with the node's MAC, and a new attempt would void the token the
// real node boots with. While the NBP is loaded iPXE asks for its own address; after the kernel and
// initrd the booted system's DHCP client asks (booted), but firmware or iPXE asking then is a
// machine that started over (or a spoof), not a booted one, and the attempt goes on. From booted
// and healthy a DISCOVER is only an event.
func NextOnDiscover(cur State, ev Event, d Discovery) (State, bool) {
	if d.Armed {
		return Discover, true
	}
	switch cur {
	case NBP:
		return cur, false
	case Kernel, Initrd:
		if d.From == ClientFirmware || d.From == ClientIPXE {
			return cur, false
		}
		return Booted, true
	case Booted, Healthy:
		if ev == EvDiscover {
			return cur, false
		}
	}
	// A DISCOVER before NBP is a retry; after boot (booted, healthy, failed) it is a reboot.
	// Either way the attempt starts over.
	return move(cur, Discover)
}

// move goes from cur to to, a change unless they are the same.
func move(cur, to State) (State, bool) { return to, to != cur }

// forward goes from cur to to if that is forward in boot order, or out of Failed.
func forward(cur, to State) (State, bool) {
	if cur < to || cur == Failed {
		return to, true
	}
	return cur, false
}
