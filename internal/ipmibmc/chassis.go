package ipmibmc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"
)

// Machine is what a Chassis switches: the same contract as redfishsim's, so that one QEMU VM
// driver (redfishsim.QEMUMachine) serves both protocols.
type Machine interface {
	// PowerOn starts the machine; from is the one-time boot override's target the start takes
	// ("Pxe"), or "" for the machine's own boot order.
	PowerOn(ctx context.Context, from string) error
	// PowerOff stops it at once, as a held power button does.
	PowerOff(ctx context.Context) error
	State(ctx context.Context) (on bool, err error)
}

// Chassis is ipmi_sim's chassis acting on a Machine. It answers each request at once, because
// ipmi_sim answers nothing else while its chassis program runs; power changes are applied in
// order by one goroutine, and until they are, the power read is the one last asked for (a real
// BMC reads on once it has asserted power, before the host has booted).
//
// The boot device set (ipmitool chassis bootdev pxe) is taken by the next start, power on or
// reset, and then cleared: ipmi_sim passes only the device to the program, never IPMI's
// persistent bit, and a one-time override is what bootfabric's ipmi driver sets.
type Chassis struct {
	m    Machine
	logf func(format string, args ...any)

	ops chan string // "on", "off", "reset"

	mu      sync.Mutex
	boot    string // the device for the next start: "none" when there is no override
	pending int    // operations queued or being applied
	want    bool   // the power state the last queued operation leaves (read while pending > 0)
}

// opTimeout bounds one power change (a QEMU start waits up to 30 s for QMP, a quit 10 s).
const opTimeout = 90 * time.Second

// NewChassis returns a chassis for m; logf receives what goes wrong while applying a change.
func NewChassis(m Machine, logf func(format string, args ...any)) *Chassis {
	return &Chassis{m: m, logf: logf, ops: make(chan string, 16), boot: "none"}
}

// bootTargets are the boot devices ipmi_sim passes (IPMI 2.0 boot flags parameter 5), and the
// start target each gives the Machine; the others start in the machine's own order.
var bootTargets = map[string]string{"pxe": "Pxe", "none": "", "default": "", "cdrom": "", "bios": "", "floppy": "", "safe": "", "diag": ""}

// Handle answers one call of the chassis program: its arguments after the program's own words,
// the device first ("0x20 get power boot", "0x20 set power 1"), and returns its output.
func (c *Chassis) Handle(ctx context.Context, args []string) (string, error) {
	if len(args) < 2 {
		return "", fmt.Errorf("chassis: %q: want DEVICE get|set PARAMS", strings.Join(args, " "))
	}
	switch op, params := args[1], args[2:]; op {
	case "get":
		return c.get(ctx, params)
	case "set":
		if len(params) == 0 || len(params)%2 != 0 {
			return "", fmt.Errorf("chassis: set %q: want PARAM VALUE pairs", strings.Join(params, " "))
		}
		for i := 0; i < len(params); i += 2 {
			if err := c.set(ctx, params[i], params[i+1]); err != nil {
				return "", err
			}
		}
		return "", nil
	default:
		return "", fmt.Errorf("chassis: unknown operation %q (want get or set)", op)
	}
}

// get prints "PARAM:VALUE" lines, as ipmi_sim reads them.
func (c *Chassis) get(ctx context.Context, params []string) (string, error) {
	var out strings.Builder
	for _, p := range params {
		switch p {
		case "power":
			on, err := c.power(ctx)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&out, "power:%d\n", map[bool]int{false: 0, true: 1}[on])
		case "boot":
			c.mu.Lock()
			fmt.Fprintf(&out, "boot:%s\n", c.boot)
			c.mu.Unlock()
		default:
			return "", fmt.Errorf("chassis: cannot get %q (power, boot)", p)
		}
	}
	return out.String(), nil
}

// power is the state a change being applied leaves, else the machine's own.
func (c *Chassis) power(ctx context.Context) (bool, error) {
	c.mu.Lock()
	pending, want := c.pending, c.want
	c.mu.Unlock()
	if pending > 0 {
		return want, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	on, err := c.m.State(ctx)
	if err != nil {
		return false, fmt.Errorf("chassis: power state: %w", err)
	}
	return on, nil
}

// set applies one parameter: power and reset are queued, boot is kept for the next start.
func (c *Chassis) set(ctx context.Context, param, value string) error {
	switch param {
	case "power":
		switch value {
		case "1":
			return c.queue("on", true)
		case "0":
			return c.queue("off", false)
		}
		return fmt.Errorf("chassis: set power %q: want 0 or 1", value)
	case "reset":
		on, err := c.power(ctx) // a reset leaves the power as it finds it
		if err != nil {
			return err
		}
		return c.queue("reset", on)
	case "boot":
		if _, ok := bootTargets[value]; !ok {
			return fmt.Errorf("chassis: set boot %q: not a boot device ipmi_sim passes", value)
		}
		c.mu.Lock()
		c.boot = value
		c.mu.Unlock()
		return nil
	case "identify":
		return nil // a VM has no light to blink
	}
	return fmt.Errorf("chassis: cannot set %q (power, reset, boot, identify)", param)
}

// queue hands a power change to the goroutine that applies them; want is the state it leaves.
func (c *Chassis) queue(op string, want bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case c.ops <- op:
	default:
		return fmt.Errorf("chassis: %d power changes waiting: refused %s", cap(c.ops), op)
	}
	c.pending++
	c.want = want
	return nil
}

// apply makes one power change; the machine's state decides what a change does (on when on, or
// a reset when off, does nothing), as for a real chassis.
func (c *Chassis) apply(ctx context.Context, op string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	on, err := c.m.State(ctx)
	if err != nil {
		return err
	}
	switch {
	case op == "on" && !on:
		return c.m.PowerOn(ctx, c.takeBoot())
	case op == "on" || !on:
		return nil
	}
	if err := c.m.PowerOff(ctx); err != nil {
		return err
	}
	if op == "reset" {
		return c.m.PowerOn(ctx, c.takeBoot())
	}
	return nil
}

// takeBoot returns the next start's target and clears the one-time override.
func (c *Chassis) takeBoot() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	from := bootTargets[c.boot]
	c.boot = "none"
	return from
}

// run applies queued changes until ctx ends.
func (c *Chassis) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case op := <-c.ops:
			if err := c.apply(ctx, op); err != nil {
				c.logf("power %s: %v", op, err)
			}
			c.mu.Lock()
			c.pending-- // at 0, power reads the machine's own state: a start that failed reads off
			c.mu.Unlock()
		}
	}
}

// request and reply are the relay's messages, one JSON line each.
type request struct {
	Args []string `json:"args"`
}

type reply struct {
	Output string `json:"output"`
	Error  string `json:"error,omitempty"`
}

// maxRequest bounds a relayed request: ipmi_sim's calls are a few words.
const maxRequest = 4 << 10

// Serve answers relayed calls on ln and applies power changes until ctx ends; then it closes ln
// and returns once the change being applied is done.
func (c *Chassis) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	worker := make(chan struct{})
	go func() { defer close(worker); c.run(ctx) }()
	go func() { <-ctx.Done(); ln.Close() }()
	var conns sync.WaitGroup
	defer conns.Wait()
	defer func() { cancel(); <-worker }()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("chassis: %w", err)
		}
		conns.Add(1)
		go func() { defer conns.Done(); c.serveConn(ctx, conn) }()
	}
}

// serveConn answers one relayed call.
func (c *Chassis) serveConn(ctx context.Context, conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(io.LimitReader(conn, maxRequest)).ReadBytes('\n')
	var req request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	var rep reply
	if err != nil {
		rep.Error = fmt.Sprintf("chassis: bad request: %v", err)
	} else if rep.Output, err = c.Handle(ctx, req.Args); err != nil {
		rep.Error = err.Error()
	}
	data, _ := json.Marshal(rep)
	_, _ = conn.Write(append(data, '\n'))
}

// Relay is the chassis program's side: it sends args to the Chassis serving socket and writes
// the answer's output to w. An error is the chassis's refusal or a relay that failed.
func Relay(ctx context.Context, socket string, args []string, w io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("chassis relay: %w", err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	data, _ := json.Marshal(request{Args: args})
	if _, err := conn.Write(append(data, '\n')); err != nil {
		return fmt.Errorf("chassis relay: %w", err)
	}
	line, err := bufio.NewReader(io.LimitReader(conn, maxRequest)).ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("chassis relay: no answer: %w", err)
	}
	var rep reply
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("chassis relay: answer %q: %w", strings.TrimSpace(string(line)), err)
	}
	if _, err := io.WriteString(w, rep.Output); err != nil {
		return err
	}
	if rep.Error != "" {
		return errors.New(rep.Error)
	}
	return nil
}
