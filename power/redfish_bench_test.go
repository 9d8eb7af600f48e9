package power

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/redfishsim"
)

// BenchmarkPowerStatusFanOut is `bootctl power status all` through the runner on 1,000 Redfish
// BMCs of which half do not answer: 500 systems served by one simulated BMC, and 500 nodes whose
// BMC address accepts connections and never answers. It reports the run's time beside the bound
// the dead nodes set, ceil(dead/fan-out) × the per-node timeout: the live nodes should add little
// to it. Run it with -benchtime=1x (one run is seconds).
func BenchmarkPowerStatusFanOut(b *testing.B) {
	const live, dead = 500, 500
	ids := make([]string, live)
	for i := range ids {
		ids[i] = fmt.Sprintf("node%04d", i)
	}
	bmc := redfishsim.Start(b, redfishsim.Options{Systems: ids, On: true})
	silent := rfSilentListener(b)
	for _, c := range []struct {
		fanOut  int
		timeout time.Duration
	}{{50, time.Second}, {200, time.Second}} {
		b.Run(fmt.Sprintf("fanout=%d/timeout=%v", c.fanOut, c.timeout), func(b *testing.B) {
			targets := make([]Target, 0, live+dead)
			for i := range live + dead {
				ep, sys := bmc.URL, ""
				if i < live {
					sys = ids[i]
				} else {
					ep = "http://" + silent
				}
				d, err := NewRedfish(RedfishConfig{Endpoint: ep, Username: bmc.User, Password: bmc.Password, System: sys})
				if err != nil {
					b.Fatal(err)
				}
				targets = append(targets, Target{Node: fmt.Sprintf("n%04d", i), BMC: ep, Controller: d})
			}
			opts := RunOptions{FanOut: c.fanOut, MinInterval: NoInterval, Timeout: c.timeout}
			// The bound the timeout and the fan-out imply: every node may use its whole timeout.
			// The silent ones alone take floor: no run can be faster.
			bound := time.Duration((live+dead+c.fanOut-1)/c.fanOut) * c.timeout
			floor := time.Duration((dead+c.fanOut-1)/c.fanOut) * c.timeout
			for b.Loop() {
				start := time.Now()
				res := Run(context.Background(), targets, OpStatus, opts)
				elapsed := time.Since(start)
				classes := map[Class]int{}
				for _, r := range res {
					classes[r.Class]++
				}
				// A live node may time out too on a loaded machine (the simulator shares its cores
				// with the client): counted, not failed, as this is a figure and not a check.
				if classes[""]+classes[TimedOut] != live+dead || classes[""] > live {
					b.Fatalf("classes %v, want %d answered (or timed out) and %d timed out", classes, live, dead)
				}
				b.ReportMetric(elapsed.Seconds(), "elapsed-s")
				b.ReportMetric(bound.Seconds(), "bound-s")
				b.ReportMetric(floor.Seconds(), "floor-s")
				b.ReportMetric(float64(classes[""]), "answered")
				b.Logf("%d nodes (%d dead), fan-out %d, timeout %v: %v, bound ceil(%d/%d)×%v = %v, floor (the dead alone) %v; %d of %d live answered",
					live+dead, dead, c.fanOut, c.timeout, elapsed.Round(time.Millisecond), live+dead, c.fanOut, c.timeout, bound, floor, classes[""], live)
				if elapsed > bound {
					b.Errorf("%v: past the bound %v", elapsed.Round(time.Millisecond), bound)
				}
			}
		})
	}
}

// rfSilentListener accepts connections and never answers: a BMC whose web server hangs. It
// returns its address; the connections close when the benchmark ends.
func rfSilentListener(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				_, _ = io.Copy(io.Discard, conn) // until the client gives up
			}()
		}
	}()
	return ln.Addr().String()
}
