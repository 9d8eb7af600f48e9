package etcdtest

import (
	"net"
	"testing"
	"time"
)

func TestStart(t *testing.T) {
	for _, n := range []int{1, 3} {
		t.Run(map[int]string{1: "single", 3: "three"}[n], func(t *testing.T) {
			start := time.Now()
			c := Start(t, Options{Members: n})
			t.Logf("%d member(s) healthy in %v: %v", n, time.Since(start).Round(time.Millisecond), c.Endpoints)
			if len(c.Endpoints) != n || len(c.Members) != n {
				t.Fatalf("%d endpoints, %d members, want %d", len(c.Endpoints), len(c.Members), n)
			}
			m := c.Member(0)
			m.Kill()
			if m.Running() {
				t.Fatal("killed member still running")
			}
			if _, err := net.DialTimeout("tcp", m.Endpoint, time.Second); err == nil {
				t.Fatal("killed member still accepts connections")
			}
			m.Restart()
			if ok, err := m.healthy(); !ok {
				t.Fatalf("restarted member unhealthy: %v", err)
			}
			m.Stop()
			if m.Running() {
				t.Fatal("stopped member still running")
			}
			m.Restart()
			c.WaitHealthy()
			if n == 3 {
				// The whole cluster down: no member is healthy until a majority is back.
				for _, m := range c.Members {
					m.Stop()
				}
				c.RestartAll()
			}
		})
	}
}
