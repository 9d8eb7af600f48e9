package fleet

import (
	"context"
	"crypto/ed25519"
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
)

func TestConfigApplyRead(t *testing.T) {
	e := startEtcd(t, 1)
	c := open(t, e.Endpoints)
	ctx := ctxFor(t, 20*time.Second)

	if _, err := c.Config(ctx); !errors.Is(err, ErrNoConfig) {
		t.Fatalf("Config before apply: %v, want ErrNoConfig", err)
	}
	var last int64
	for _, tc := range []struct {
		name   string
		doc    string
		newRev bool
	}{
		{"first", "servers: [bs0]\n", true},
		{"same again", "servers: [bs0]\n", false},
		{"changed", "servers: [bs0, bs1]\n", true},
		{"back", "servers: [bs0]\n", true},
	} {
		rev, err := c.ApplyConfig(ctx, []byte(tc.doc), testKey)
		if err != nil {
			t.Fatalf("%s: ApplyConfig: %v", tc.name, err)
		}
		if (rev > last) != tc.newRev || rev < last {
			t.Errorf("%s: revision %d after %d, want new %v", tc.name, rev, last, tc.newRev)
		}
		last = rev
		cr, err := c.Config(ctx)
		if err != nil || string(cr.Doc) != tc.doc || cr.Revision != rev || len(cr.SHA256) != 64 {
			t.Errorf("%s: Config = %q rev %d sha %q, %v; want %q rev %d", tc.name, cr.Doc, cr.Revision, cr.SHA256, err, tc.doc, rev)
		}
	}
	// Another fleet on the same etcd sees none of it.
	other := open(t, e.Endpoints, func(o *Options) { o.Fleet = "other" })
	if _, err := other.Config(ctx); !errors.Is(err, ErrNoConfig) {
		t.Errorf("other fleet's Config: %v, want ErrNoConfig", err)
	}
}

// TestWatchConfig: the current revision first, then each new one, across an etcd restart.
func TestWatchConfig(t *testing.T) {
	e := startEtcd(t, 1)
	c := open(t, e.Endpoints)
	ctx := ctxFor(t, 40*time.Second)
	rev1, err := c.ApplyConfig(ctx, []byte("v1"), testKey)
	if err != nil {
		t.Fatal(err)
	}
	ch := c.WatchConfig(ctx)
	next := func(what string) ConfigRevision {
		t.Helper()
		select {
		case cr, ok := <-ch:
			if !ok {
				t.Fatalf("%s: watch closed", what)
			}
			return cr
		case <-time.After(15 * time.Second):
			t.Fatalf("%s: nothing within 15 s", what)
		}
		return ConfigRevision{}
	}
	if cr := next("current"); string(cr.Doc) != "v1" || cr.Revision != rev1 {
		t.Fatalf("first delivery %q rev %d, want v1 rev %d", cr.Doc, cr.Revision, rev1)
	}
	rev2, _ := c.ApplyConfig(ctx, []byte("v2"), testKey)
	if cr := next("new"); string(cr.Doc) != "v2" || cr.Revision != rev2 {
		t.Fatalf("delivery %q rev %d, want v2 rev %d", cr.Doc, cr.Revision, rev2)
	}

	start := time.Now()
	e.Member(0).Stop()
	e.Member(0).Restart()
	var rev3 int64
	testfix.WaitFor(t, "apply after restart", 10*time.Second, func() bool {
		rev3, err = c.ApplyConfig(ctx, []byte("v3"), testKey)
		return err == nil
	})
	if cr := next("after restart"); string(cr.Doc) != "v3" || cr.Revision != rev3 {
		t.Fatalf("after restart: %q rev %d, want v3 rev %d", cr.Doc, cr.Revision, rev3)
	}
	t.Logf("etcd restart to new revision delivered: %v", time.Since(start).Round(time.Millisecond))

	// The channel closes when ctx ends, even with nobody reading: cancelled once the new watch's
	// goroutine is blocked delivering v3.
	sending := blockedSends()
	wctx, cancel := context.WithCancel(ctx)
	ch2 := c.WatchConfig(wctx)
	testfix.WaitFor(t, "the new watch delivering v3", 10*time.Second, func() bool { return blockedSends() > sending })
	cancel()
	testfix.WaitFor(t, "watch closed after cancel", 5*time.Second, func() bool {
		select {
		case _, ok := <-ch2:
			return !ok
		default:
			return false
		}
	})
}

// TestPublishConfig: a revision builds on the current one only when the servers would take it.
// A forgery's serial (a leaked key's, far ahead) does not carry over, a same document whose serial
// is at or below what a server runs is written again rather than reported unchanged, and a
// revision written since the base was read is not overwritten.
func TestPublishConfig(t *testing.T) {
	e := startEtcd(t, 1)
	ctx := ctxFor(t, 20*time.Second)
	c := open(t, e.Endpoints)
	future := time.Unix(0, math.MaxInt64)
	leaked := open(t, e.Endpoints, func(o *Options) { o.Now = func() time.Time { return future } })
	trusted := []ed25519.PublicKey{testKey.Public().(ed25519.PublicKey)}

	first, changed, err := c.PublishConfig(ctx, []byte("v1"), testKey, PublishOptions{})
	if err != nil || !changed || first.Number != 1 || string(first.Doc) != "v1" {
		t.Fatalf("first: %+v changed %v, %v", first, changed, err)
	}
	if _, err := leaked.ApplyConfig(ctx, []byte("v2"), testKey); err != nil {
		t.Fatal(err)
	}
	third, changed, err := c.PublishConfig(ctx, []byte("v3"), testKey, PublishOptions{Trusted: trusted})
	if err != nil || !changed || third.Serial >= uint64(future.UnixNano()) || third.Serial <= first.Serial {
		t.Fatalf("after a serial far ahead: serial %d changed %v, %v; want the time now", third.Serial, changed, err)
	}
	same, changed, err := c.PublishConfig(ctx, []byte("v3"), testKey, PublishOptions{Trusted: trusted, After: third.Serial})
	if err != nil || !changed || same.Serial <= third.Serial {
		t.Errorf("same document, a server runs a serial as high: serial %d after %d, changed %v, %v; want written again", same.Serial, third.Serial, changed, err)
	}
	if _, _, err := c.PublishConfig(ctx, []byte("v4"), testKey, PublishOptions{Base: third.Revision}); !errors.Is(err, ErrConflict) {
		t.Errorf("base no longer current: %v, want ErrConflict", err)
	}
	if cur, _ := c.Config(ctx); cur.Revision != same.Revision {
		t.Errorf("configuration at etcd revision %d after the conflict, want %d", cur.Revision, same.Revision)
	}
}

// blockedSends counts the goroutines blocked in send: watches delivering a value nobody takes.
// One that has just handed its value over is runnable, not blocked, until it is scheduled.
func blockedSends() int {
	buf := make([]byte, 1<<20)
	for n := 0; n < 8; n++ { // 256 MB at most
		if l := runtime.Stack(buf, true); l < len(buf) {
			buf = buf[:l]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	blocked := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		header, _, _ := strings.Cut(g, "\n")
		if strings.Contains(header, "[select") && strings.Contains(g, "fleet.send[") {
			blocked++
		}
	}
	return blocked
}
