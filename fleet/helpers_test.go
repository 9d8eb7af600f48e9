package fleet

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// testLog is a zap logger writing to t.Log until the test has ended, and dropping lines after
// (background loops may log while they stop, and t.Log after the end panics).
func testLog(t testing.TB) *zap.Logger {
	w := &tbWriter{t: t}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	enc := zapcore.NewConsoleEncoder(zap.NewDevelopmentEncoderConfig())
	return zap.New(zapcore.NewCore(enc, w, zapcore.DebugLevel))
}

type tbWriter struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

func (w *tbWriter) Sync() error { return nil }

// startEtcd starts an etcd cluster of n members for the test.
func startEtcd(t *testing.T, n int) *etcdtest.Cluster {
	t.Helper()
	return etcdtest.Start(t, etcdtest.Options{Members: n})
}

// open opens a client of fleet "test" on endpoints, closed at the end of the test.
func open(t *testing.T, endpoints []string, mod ...func(*Options)) *Client {
	t.Helper()
	// Generous: a password login is a bcrypt check in etcd, which under -race beside the main
	// test run (nice 10 on 2 cores) took longer than 2 s (TestAuthServerLimits, ci13), and a
	// plain request there outlasted a 2 s request timeout (TestAuthRefused, in CI at stop 45).
	opts := Options{Endpoints: endpoints, Fleet: "test", DialTimeout: 10 * time.Second, RequestTimeout: 8 * time.Second, Log: testLog(t)}
	for _, f := range mod {
		f(&opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Open(ctx, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ctxFor returns a context ending after d, cancelled at the end of the test.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testKey signs the tests' configurations.
var testKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))
