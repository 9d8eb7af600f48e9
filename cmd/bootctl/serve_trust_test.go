package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/internal/etcdtest"
	"github.com/bootfabric/bootfabric/internal/testfix"
)

// trustServer is one `bootctl serve --etcd` run of TestServeFleetTrust.
type trustServer struct {
	url    string
	cancel context.CancelFunc
	done   chan struct{}
	errs   strings.Builder
}

// TestServeFleetTrust runs fleet member bs0 through a key rotation and attacks on its
// configuration:
//   - it trusts two keys (--config-key twice); a revision signed by the retiring key A with a
//     serial far in the future (a leaked key, or a clock far ahead) is refused, and the new key
//     B's fleet apply is applied at once, which apply reports;
//   - a revision signed by a key it does not trust makes fleet apply exit 1 naming bs0's refusal;
//   - restarted while that revision is current, bs0 serves the last one it applied;
//   - an old revision of B's written back is refused, and fleet apply of that same document
//     writes it anew (rather than call it unchanged) so that bs0 applies it.
func TestServeFleetTrust(t *testing.T) {
	ec := etcdtest.Start(t, etcdtest.Options{Members: 1})
	etcd := strings.Join(ec.Endpoints, ",")
	f := newServeFiles(t, "off")
	file := fleetFiles(t, f, "")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keyA, keyB, keyC := operatorKey(t), operatorKey(t), operatorKey(t)
	state := filepath.Join(t.TempDir(), "state")
	node04 := "node04,52:54:00:00:00:04,127.0.0.14,s0-b1-n0\n"
	base := []string{"node00", "node01", "node02", "node03"}
	withNode04 := append(slices.Clone(base), "node04")

	apply := func(key string, wantCode int, args ...string) bootsrv.FleetApplyResult {
		t.Helper()
		code, out, errs := runBootctl(t, ctx, append([]string{"fleet", "apply", "-f", file, "--etcd", etcd, "--fleet", "t", "--sign-key", key, "--wait", "15s", "-o", "json"}, args...)...)
		t.Logf("fleet apply --sign-key %s: exit %d\n%s", filepath.Base(filepath.Dir(key)), code, errs)
		if code != wantCode {
			t.Fatalf("fleet apply: exit %d, want %d\n%s\n%s", code, wantCode, out, errs)
		}
		return decodeJSONOut[bootsrv.FleetApplyResult](t, out)
	}
	var runs []*trustServer // every run of bs0, for its log
	start := func() *trustServer {
		port := testfix.FreePort(t)
		sctx, scancel := context.WithCancel(ctx)
		s := &trustServer{url: fmt.Sprintf("http://127.0.0.1:%d", port), cancel: scancel, done: make(chan struct{})}
		go func() {
			defer close(s.done)
			_, _, errs := runBootctl(t, sctx, "serve", "--etcd", etcd, "--fleet", "t", "--name", "bs0", "--lease-ttl", "2s",
				"--config-key", keyA+".pub", "--config-key", keyB+".pub", "--fleet-secret", keyA+".secret",
				"--http", fmt.Sprintf("127.0.0.1:%d", port), "--tftp", "off", "--state-dir", state,
				"--images", filepath.Join(f.dir, "images"), "--ipxe-dir", filepath.Join(f.dir, "ipxe"), "--log-level", "warn")
			s.errs.WriteString(errs)
		}()
		runs = append(runs, s)
		return s
	}
	stop := func(s *trustServer) {
		s.cancel()
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			t.Fatal("bs0 did not stop")
		}
	}
	waitNodes := func(s *trustServer, want []string) {
		t.Helper()
		testfix.WaitFor(t, fmt.Sprintf("bs0 answers %v", want), 15*time.Second, func() bool {
			got, _ := nodesOf(s.url)
			return slices.Equal(got, want)
		})
	}

	apply(keyA, 0)
	bs0 := start()
	defer func() {
		if bs0.cancel(); true {
			<-bs0.done
		}
	}()
	waitNodes(bs0, base)

	// The retiring key A, leaked, signs a revision with the largest serial a clock gives.
	fleetFiles(t, f, "node06,52:54:00:00:00:06,127.0.0.16,s0-b1-n2\n")
	doc, err := bootconfig.LoadFleetFile(file)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := doc.Encode()
	if err != nil {
		t.Fatal(err)
	}
	leakedKey, err := fleet.LoadSigningKey(keyA)
	if err != nil {
		t.Fatal(err)
	}
	leaked, err := fleet.Open(ctx, fleet.Options{Endpoints: ec.Endpoints, Fleet: "t", Now: func() time.Time { return time.Unix(0, math.MaxInt64) }})
	if err != nil {
		t.Fatal(err)
	}
	defer leaked.Close()
	if _, err := leaked.ApplyConfig(ctx, enc, leakedKey); err != nil {
		t.Fatal(err)
	}
	// The operator's new key B: applied at once, and fleet apply says bs0 applied it.
	fleetFiles(t, f, node04)
	res := apply(keyB, 0, "--config-key", keyA+".pub")
	if len(res.Applied) != 1 || res.Applied[0] != (bootsrv.ServerVerdict{Name: "bs0", State: bootsrv.VerdictApplied}) {
		t.Errorf("fleet apply with the new key: servers %+v, want bs0 applied", res.Applied)
	}
	waitNodes(bs0, withNode04)
	rawValue := rawEtcd(t, ec.Endpoints)
	d1Value := rawValue.get(ctx, fleet.Root+"t/config")

	// A key bs0 does not trust: in etcd, but fleet apply exits 1 with bs0's refusal.
	fleetFiles(t, f, node04+"node05,52:54:00:00:00:05,127.0.0.15,s0-b1-n1\n")
	code, out, errs := runBootctl(t, ctx, "fleet", "apply", "-f", file, "--etcd", etcd, "--fleet", "t", "--sign-key", keyC, "--wait", "15s")
	if code != 1 || !strings.Contains(errs, "but refused by bs0 (configuration revision is not signed by a trusted key") || !strings.Contains(out, "servers: refused by bs0") {
		t.Errorf("fleet apply with an untrusted key: exit %d, want 1 naming bs0's refusal\n%s%s", code, out, errs)
	}

	// Restarted while that revision is current, bs0 serves the one it applied last.
	stop(bs0)
	bs0 = start()
	waitNodes(bs0, withNode04)

	// B's revision without node04, then the node04 one written back: refused as a rollback, and
	// fleet apply of that document writes it again.
	fleetFiles(t, f, "")
	apply(keyB, 0, "--config-key", keyA+".pub")
	waitNodes(bs0, base)
	rawValue.put(ctx, fleet.Root+"t/config", d1Value)
	fleetFiles(t, f, node04)
	if res := apply(keyB, 0, "--config-key", keyA+".pub"); !res.Changed {
		t.Errorf("fleet apply of the document written back: reported unchanged, bs0 refuses that revision")
	}
	waitNodes(bs0, withNode04)
	stop(bs0)
	var logs strings.Builder
	for _, r := range runs {
		logs.WriteString(r.errs.String())
	}
	for _, want := range []string{"serial is too far in the future", "not signed by a trusted key", "serving the configuration revision applied last", "older than one applied before"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("bs0's logs do not say %q:\n%s", want, logs.String())
		}
	}
}
