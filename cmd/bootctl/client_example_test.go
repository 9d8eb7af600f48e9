package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testenv"
	"github.com/bootfabric/bootfabric/nodestate"
)

// TestExampleHealthScript runs the README's client script, examples/client/bootfabric-health, as
// a booted node00 would: with the kernel command line of its iPXE script, against a real server
// on loopback. A passing check makes the node healthy, a failing one failed with the check's
// output, and a command line without the URL is no error.
func TestExampleHealthScript(t *testing.T) {
	testenv.NeedTool(t, "curl", "curl")
	script, err := filepath.Abs("../../examples/client/bootfabric-health")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		check string
		want  nodestate.State
	}{{"true", nodestate.Healthy}, {"echo disk sdb missing; false", nodestate.Failed}} {
		f := newServeFiles(t, "off")
		srv, stop := startServer(t, f)
		ipxe := string(httpGet(t, "http://"+srv.HTTPAddr().String()+"/ipxe/52:54:00:00:00:00"))
		m := regexp.MustCompile(`(?m)^kernel \S+ (.*)$`).FindStringSubmatch(ipxe)
		if m == nil {
			t.Fatalf("no kernel line in\n%s", ipxe)
		}
		cmdline := filepath.Join(f.dir, "cmdline")
		writeText(t, cmdline, m[1]+"\n")
		out, err := runScript(script, cmdline, tc.check)
		if err != nil {
			t.Fatalf("check %q: %v\n%s", tc.check, err, out)
		}
		n := waitState(t, srv, "node00", tc.want)
		if tc.want == nodestate.Failed && !strings.Contains(n.Error, "disk sdb missing") {
			t.Errorf("failed node's error %q does not carry the check's output", n.Error)
		}
		stop()
	}
	empty := filepath.Join(t.TempDir(), "cmdline")
	writeText(t, empty, "console=ttyS0 quiet\n")
	if out, err := runScript(script, empty, "true"); err != nil || !strings.Contains(out, "no bootfabric.health=") {
		t.Errorf("without the URL: %v, %q", err, out)
	}
}

func runScript(script, cmdline, check string) (string, error) {
	cmd := exec.Command("sh", script)
	cmd.Env = append(os.Environ(), "BOOTFABRIC_CMDLINE="+cmdline, "BOOTFABRIC_CHECK="+check)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
