package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootrun"
)

// TestBootDryRunP2P: boot --dry-run --delivery p2p puts the batch's boot with the root image by
// peers beside the same boot by the servers, in the table and the JSON; without --dry-run and
// with a bad value it is bad input.
func TestBootDryRunP2P(t *testing.T) {
	f := newPowerFixture(t)
	cfg := f.bootConfig(t)
	ctx := context.Background()
	args := []string{"boot", "--dry-run", "--config", cfg, "--image-size", "50MB", "--delivery", "p2p", "s0-b0-n[0-3]"}
	code, out, errs := runBootctl(t, ctx, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var plan bootrun.Plan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	p := plan.P2P
	if p == nil || p.Delivery.String() != "p2p" || p.RootFile != "initrd" || p.Root == nil || !(p.P2PSeconds > 0) || p.P2PSeconds > p.ServerSeconds+p.Root.PipelineSeconds {
		t.Fatalf("p2p %+v", p)
	}
	code, table, _ := runBootctl(t, ctx, args...)
	if code != 0 || !strings.Contains(table, "delivery p2p, the whole batch at once without admission") {
		t.Errorf("table (exit %d) lacks the p2p line:\n%s", code, table)
	}
	code, out, _ = runBootctl(t, ctx, "boot", "--dry-run", "--config", cfg, "-o", "json", "s0-b0-n0")
	if code != 0 || strings.Contains(out, `"p2p"`) {
		t.Errorf("server delivery (exit %d) has a p2p block", code)
	}
	wantBadInput(t, ctx, []string{"boot", "--dry-run", "--config", cfg, "--delivery", "p2q", "s0-b0-n0"}, `(did you mean p2p?)`)
	wantBadInput(t, ctx, []string{"boot", "--config", cfg, "--journal", t.TempDir() + "/j", "--delivery", "p2p", "s0-b0-n0"}, "only with --dry-run")
}
