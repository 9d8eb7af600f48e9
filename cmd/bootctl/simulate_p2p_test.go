package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSimulateP2P: --delivery p2p puts the boot with the root image by peers beside the unicast
// one, in the table and the JSON, the same bytes on every run; bad input exits 2.
func TestSimulateP2P(t *testing.T) {
	args := []string{"simulate", "--topology", "mini", "--batch", "1,all", "--delivery", "p2p"}
	code, out, errs := bootctl(t, append(args, "-o", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var res struct {
		Runs []struct {
			Batch, Delivery string
			Speedup         float64 `json:"speedup_vs_unicast"`
			P2P             *struct {
				RootFile string `json:"root_file"`
				Root     struct {
					Seconds  float64
					Schedule string
				}
			}
			Result struct {
				BatchSeconds float64 `json:"batch_seconds"`
			}
		}
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 4 {
		t.Fatalf("%d runs, want unicast and p2p for 2 batches", len(res.Runs))
	}
	for i, r := range res.Runs {
		want := []string{"unicast", "p2p"}[i%2]
		if r.Delivery != want {
			t.Errorf("run %d: delivery %s, want %s", i, r.Delivery, want)
		}
		if want == "unicast" {
			continue
		}
		if r.P2P == nil || r.P2P.RootFile != "initrd" || r.P2P.Root.Seconds <= 0 || r.P2P.Root.Schedule == "" {
			t.Errorf("run %d: p2p %+v", i, r.P2P)
			continue
		}
		if uni := res.Runs[i-1].Result.BatchSeconds; r.Speedup != uni/r.Result.BatchSeconds {
			t.Errorf("run %d: speedup %v, want %v", i, r.Speedup, uni/r.Result.BatchSeconds)
		}
	}
	_, again, _ := bootctl(t, append(args, "-o", "json")...)
	if again != out {
		t.Error("two runs differ")
	}
	code, out, _ = bootctl(t, args...)
	if code != 0 || !strings.Contains(out, "p2p") || !strings.Contains(out, "1 copy per") {
		t.Errorf("table (exit %d) lacks the p2p row:\n%s", code, out)
	}
	bad := []struct {
		args []string
		want string
	}{
		{[]string{"--delivery", "p2"}, `--delivery: "p2" is not one of unicast, server, multicast, p2p (did you mean p2p?)`},
		{[]string{"--delivery", "p2p", "--fail", "bs1@1s"}, "not with --delivery p2p"},
		{[]string{"--delivery", "p2p", "--files", "nbp=70KB"}, "no root image"},
	}
	for _, tc := range bad {
		code, _, errs := bootctl(t, append([]string{"simulate", "--topology", "mini"}, tc.args...)...)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}
