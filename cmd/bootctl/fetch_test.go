package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/delivery"
	"github.com/bootfabric/bootfabric/internal/testfix"
	"go.uber.org/zap/zaptest"
)

// TestFetchBadInput: each bad flag gets exit status 2 and a message naming it.
func TestFetchBadInput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "f")
	base := []string{"fetch", "--server", "http://127.0.0.1:1", "--file", "vmlinuz", "--node", "node00", "--out", out}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "ftp://x"}, "--server"},
		{[]string{"--upload-rate", "fast"}, "--upload-rate"},
		{[]string{"--bind", "nowhere"}, "--bind"},
		{[]string{"--port", "70000"}, "--port"},
		{[]string{"--seed-for", "-1s"}, "--seed-for"},
		{[]string{"--out", "/nonexistent/dir/f"}, "--out"},
		{[]string{"--node", ""}, "--node"},
		{[]string{"--output", "xml"}, "--output"},
	} {
		code, _, errText := bootctl(t, append(append([]string{}, base...), tc.args...)...)
		if code != 2 || !strings.Contains(errText, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and a message naming %s", tc.args, code, errText, tc.want)
		}
	}
	// A server that is not there is no bad input: exit 1.
	if code, _, errText := bootctl(t, base...); code != 1 || !strings.Contains(errText, "metainfo") {
		t.Errorf("no server: exit %d, %q; want 1 and the metainfo's error", code, errText)
	}
}

// TestFetchServerOnlyJSON fetches a file from a loopback server alone and checks the file and the
// JSON result.
func TestFetchServerOnlyJSON(t *testing.T) {
	dir := t.TempDir()
	b := testfix.BootDir(t, dir, testfix.BootSizes{Kernel: 1<<20 + 9, Initrd: 100, NBP: 100, Seed: 3}, "")
	testfix.WriteFile(t, filepath.Join(dir, "inventory.csv"), []byte(testfix.MiniInventoryCSV(t)))
	cfg, err := bootconfig.LoadConfig(testfix.WriteFile(t, filepath.Join(dir, "serve.yaml"), []byte(testfix.ServeYAML("0s", `{mode: "off"}`))))
	if err != nil {
		t.Fatal(err)
	}
	s, err := bootsrv.New(cfg, bootsrv.Options{Logger: zaptest.NewLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	testfix.Serve(t, s)
	out := filepath.Join(t.TempDir(), "vmlinuz")
	code, stdout, errText := bootctl(t, "fetch", "--server", s.BaseURL(), "--file", "vmlinuz", "--out", out, "--server-only", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errText)
	}
	var res delivery.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	got, err := os.ReadFile(out)
	if err != nil || !bytes.Equal(got, b.Kernel) {
		t.Fatalf("fetched %d bytes that are not the file (%v)", len(got), err)
	}
	if res.Size != int64(len(b.Kernel)) || res.FromServer < res.Size || res.FromPeers != 0 {
		t.Errorf("result %+v: want size %d all from the server", res, len(b.Kernel))
	}
}
