package testfix

import (
	"context"
	"testing"
	"time"
)

// Server is a boot server as Serve runs it (bootsrv.Server): Listen opens its sockets, Serve runs
// it until the context ends.
type Server interface {
	Listen(ctx context.Context) error
	Serve(ctx context.Context) error
}

// Serve opens srv's sockets and runs it until the returned function is called or the test ends,
// whichever comes first; stopping waits up to 15 s for Serve to return and fails the test if it
// returns an error or does not return.
func Serve(t testing.TB, srv Server) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.Listen(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("server did not stop within 15 s")
		}
	}
	t.Cleanup(stop)
	return stop
}
