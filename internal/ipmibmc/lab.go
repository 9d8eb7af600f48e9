package ipmibmc

import (
	"context"
	"fmt"
	"net"
	"os"
	"time"
)

// ServeMachine serves an IPMI BMC for m until ctx ends (then nil) or the simulator or the relay
// fails: ipmi_sim (cfg) answers the clients, and its chassis program relays each power or boot
// device request over the unix socket sock to a Chassis acting on m. ready gets the simulator
// once it answers; its error ends the serving. m is powered off on return: a lab machine left
// running has nothing that could stop it.
func ServeMachine(ctx context.Context, cfg Config, sock string, m Machine, logf func(string, ...any), ready func(*Sim) error) error {
	if err := os.Remove(sock); err != nil && !os.IsNotExist(err) {
		return err
	}
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return err
	}
	// Whoever reaches the socket powers the machine: root's alone, as the BMC's password file.
	if err := os.Chmod(sock, 0o600); err != nil {
		ln.Close()
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- NewChassis(m, logf).Serve(ctx, ln) }()
	defer func() {
		cancel()
		<-served
		offCtx, offCancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer offCancel()
		if err := m.PowerOff(offCtx); err != nil {
			logf("%v", err)
		}
	}()
	sim, err := Start(ctx, cfg)
	if err != nil {
		return err
	}
	defer sim.Stop()
	if err := ready(sim); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case <-sim.Done():
		return fmt.Errorf("ipmi_sim exited: %s", sim.LogTail(5))
	case err := <-served:
		served <- err // for the deferred wait
		if err == nil {
			// The relay ends without an error only with ctx, which select may
			// see second: an interrupt, not a failure.
			return nil
		}
		return fmt.Errorf("chassis relay: %w", err)
	}
}
