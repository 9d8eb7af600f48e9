package redfishsim

import (
	"context"
	"time"
)

// ServeMachines serves a Redfish BMC in dir whose systems are machines (by Id; opts.Systems in
// order) until ctx ends (then nil); ready gets the BMC once it listens, and its error ends the
// serving. The machines are powered off on return, each failure told to opts.Logf: a lab machine
// left running has nothing that could stop it.
func ServeMachines(ctx context.Context, opts Options, dir string, machines map[string]Machine, ready func(*BMC) error) error {
	opts.Machine = func(system string) Machine { return machines[system] }
	bmc, err := New(opts, dir)
	if err != nil {
		return err
	}
	defer func() {
		bmc.Close()
		offCtx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for _, name := range opts.Systems {
			if err := machines[name].PowerOff(offCtx); err != nil && opts.Logf != nil {
				opts.Logf("%s: %v", name, err)
			}
		}
	}()
	if err := ready(bmc); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}
