package bootsrv

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestFleetMemberNothingTrusted (issue 36): a server that never applied a revision starts while
// the current one is forged. It has nothing of its own to fall back on, so it serves nothing: no
// HTTP listener, no membership (the live servers then answer its nodes, as for a dead server), one
// error line saying so and how to recover, and it keeps waiting for a trusted revision instead of
// exiting. Serving the forged revision is what must never happen.
func TestFleetMemberNothingTrusted(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := fleet.Open(ctx, fleet.Options{Endpoints: ec.Endpoints, Fleet: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	trusted, _, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	_, forger, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, err := c.ApplyConfig(ctx, []byte("servers: [{name: bs0, address: 127.0.0.1}]\n"), forger)
	if err != nil {
		t.Fatal(err)
	}
	trust, err := fleet.OpenTrust([]ed25519.PublicKey{trusted}, filepath.Join(t.TempDir(), "fleet-applied.json"))
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.InfoLevel)
	listen := fmt.Sprintf("127.0.0.1:%d", testfix.FreePort(t))
	mctx, mcancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- RunMember(mctx, MemberOptions{Client: c, Name: "bs0", Trust: trust, TTL: fleetTestTTL, Logger: zap.New(core),
			Local: bootconfig.LocalSettings{StateDir: t.TempDir(), Images: t.TempDir(), HTTPListen: listen, TFTPListen: "off"}})
	}()
	defer func() {
		mcancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("RunMember did not end")
		}
	}()

	const msg = "no trusted configuration revision to serve"
	testfix.WaitFor(t, "the line saying it serves nothing", 20*time.Second, func() bool {
		return logs.FilterMessageSnippet(msg).Len() > 0
	})
	line := logs.FilterMessageSnippet(msg).All()[0]
	fields := line.ContextMap()
	if line.Level != zapcore.ErrorLevel || fields["refused_revision"] != forged || !strings.Contains(line.Message, "bootctl fleet apply") ||
		!strings.Contains(fmt.Sprint(fields["error"]), "not signed by a trusted key") {
		t.Errorf("the line: %s %q %v; want an error naming the refused revision %d, the reason and the fix", line.Level, line.Message, fields, forged)
	}
	select {
	case err := <-done:
		t.Fatalf("RunMember ended (%v); it should wait for a trusted revision", err)
	default:
	}
	if ms, _, err := c.Members(ctx); err != nil || len(ms) != 0 {
		t.Errorf("members %v (%v), want none: a server that serves nothing must not hold its nodes", ms, err)
	}
	if conn, err := net.DialTimeout("tcp", listen, time.Second); err == nil {
		conn.Close()
		t.Errorf("something listens on %s: the server serves the forged revision", listen)
	}
}
