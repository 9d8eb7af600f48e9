// Package power switches nodes on and off through their out-of-band controllers (BMCs), and sets
// their next boot to the network: what an operator does with ipmitool or a Redfish client before a
// network boot, behind one small interface with a driver per kind of controller.
//
// A Controller acts on one machine. Drivers: ipmi (IPMI 2.0 RMCP+, "lanplus"), redfish (DMTF
// Redfish over HTTPS, through gofish), exec (a command template per action, as Warewulf's
// ipmitool template, for anything else). Every error a driver returns is classified (Classify) so that a caller can tell an unreachable BMC from a refused
// password, a busy controller or a timeout, and never carries a password.
package power

import (
	"context"
	"errors"
	"fmt"
)

// State is a machine's power state as its controller reports it.
type State string

// Power states.
const (
	On  State = "on"
	Off State = "off"
)

// BootMode is the firmware a one-time network boot is asked of.
type BootMode string

// Boot modes of a network boot.
const (
	Legacy BootMode = "legacy" // BIOS PXE
	UEFI   BootMode = "uefi"   // UEFI PXE (or HTTP boot, as the firmware decides)
)

// Controller switches one machine. Every method blocks until the controller has answered or ctx
// ends. No driver's zero value is usable: make them with their constructors (NewIPMI, NewExec).
type Controller interface {
	// On powers the machine on (nothing happens when it is on).
	On(ctx context.Context) error
	// Off powers the machine off at once, as the power button held down would.
	Off(ctx context.Context) error
	// Cycle powers the machine off and on again; a machine that is off is powered on.
	Cycle(ctx context.Context) error
	// Status reports the power state.
	Status(ctx context.Context) (State, error)
	// PXENext makes the next boot, and only the next, a network boot in the given mode.
	PXENext(ctx context.Context, mode BootMode) error
}

// Identifier lights a machine's identify LED or puts it out: the drivers whose BMCs have one.
type Identifier interface {
	Identify(ctx context.Context, on bool) error
}

// Class is the kind of a controller's failure, for the operator and for retry decisions.
type Class string

// Failure classes.
const (
	Unreachable Class = "unreachable"  // no answer at the BMC's address (down, wrong address, no route)
	AuthRefused Class = "auth-refused" // the BMC refused the user or password
	Busy        Class = "busy"         // the BMC answered that it cannot do it now (node busy, out of sessions)
	TimedOut    Class = "timed-out"    // the BMC started answering, then ran out of time
	Failed      Class = "failed"       // anything else: the BMC refused the command, a bad answer
)

// Error is a classified controller failure.
type Error struct {
	Class Class
	Op    string // "on", "off", "cycle", "status", "pxe", "identify"
	Err   error
}

func (e *Error) Error() string { return fmt.Sprintf("power %s: %s: %v", e.Op, e.Class, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Classify returns err's class: its Error's, TimedOut for a context deadline, else Failed.
func Classify(err error) Class {
	var pe *Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &pe):
		return pe.Class
	case errors.Is(err, context.DeadlineExceeded):
		return TimedOut
	}
	return Failed
}
