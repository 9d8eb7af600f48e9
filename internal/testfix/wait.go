package testfix

import (
	"net"
	"testing"
	"time"
)

// FreePort returns a TCP port of 127.0.0.1 that was free a moment ago, for a command that takes
// its listen address as a flag and cannot report the port it bound.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// PollInterval is how often WaitFor checks its condition.
const PollInterval = 10 * time.Millisecond

// WaitFor checks cond every PollInterval until it holds and returns how long that took; if it
// does not hold within limit the test fails, naming what was awaited.
func WaitFor(t testing.TB, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > limit {
			t.Fatalf("%s: not within %v", what, limit)
		}
		time.Sleep(PollInterval)
	}
	return time.Since(start)
}
