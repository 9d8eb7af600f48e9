package testcluster

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/topology"
	"golang.org/x/sync/errgroup"
)

// linksUpLimit bounds how long Up waits for the kernel to see every link up.
const linksUpLimit = 20 * time.Second

// waitLinksUp waits until every interface of every switch and server namespace is
// operationally up. A veth's carrier comes on when both its ends are up, but the kernel acts on
// that later, in its link-watch work (at most once a second, and all of a large cluster's links in
// one go): until then a bridge does not forward through the port. Without the wait, the first
// boot of a fresh cluster lost a second or more on one board: its switch flooded the nodes'
// DISCOVERs to every port but its uplink, then sent them all at once (TestBootAdaptsPerLink's
// first run, 1.1-1.6 s). The operational state is set in the same work, so it says when the
// port forwards. Every link has a switch or server end, and both ends of a veth are handled
// together, so the nodes' own namespaces are not polled.
func (c *Cluster) waitLinksUp(ctx context.Context) error {
	var watched []int
	for v := range c.ns {
		if k := c.Graph.Kind(topology.VertexID(v)); k == topology.Switch || k == topology.Server {
			watched = append(watched, v)
		}
	}
	deadline := time.Now().Add(linksUpLimit)
	for {
		down, err := c.linksNotUp(ctx, watched)
		if err != nil || down == "" {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("links not up %v after they were set up: %s", linksUpLimit, down)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// linksNotUp returns one interface of the namespaces watched that is not operationally up, as
// "namespace/interface (state)", or "" when all are.
func (c *Cluster) linksNotUp(ctx context.Context, watched []int) (string, error) {
	var mu sync.Mutex
	down := ""
	grp, gctx := errgroup.WithContext(ctx)
	grp.SetLimit(buildWorkers)
	for _, v := range watched {
		grp.Go(func() error {
			out, err := c.ip(gctx, v, "-o", "link", "show")
			if err != nil {
				return err
			}
			if dev, state := firstNotUp(out); dev != "" {
				mu.Lock()
				down = fmt.Sprintf("%s/%s (%s)", c.ns[v], dev, state)
				mu.Unlock()
			}
			return nil
		})
	}
	err := grp.Wait()
	return down, err
}

// firstNotUp reads `ip -o link show` and returns the first interface but lo whose operational
// state is not UP, with that state.
func firstNotUp(out string) (dev, state string) {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimSuffix(f[1], ":"), "@")
		if name == "lo" {
			continue
		}
		st := "unknown"
		for i := 2; i+1 < len(f); i++ {
			if f[i] == "state" {
				st = f[i+1]
				break
			}
		}
		if st != "UP" {
			return name, st
		}
	}
	return "", ""
}
