package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testfix"
	"github.com/bootfabric/bootfabric/power"
	"github.com/bootfabric/bootfabric/testcluster"
)

// TestClusterBMCCommands: `bootctl cluster bmc --command` serves one Redfish BMC whose systems are
// commands; `bootctl power` finds each by its name on the one address: power on starts the
// command (a long one reads on until powered off; a short one reads off once it has ended), power
// off kills it, and the BMC's end kills what still runs.
func TestClusterBMCCommands(t *testing.T) {
	dir, pw, creds := labBMCFiles(t)
	addr := fmt.Sprintf("127.0.0.1:%d", testfix.FreePort(t))
	marker := filepath.Join(dir, "long.pid")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw2 := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		code := run(ctx, []string{"bootctl", "cluster", "bmc", "--listen", addr, "--dir", filepath.Join(dir, "bmc"), "--password-file", pw, "-o", "json",
			"--command", "long=echo $$ > " + marker + "; exec sleep 600", "--command", "short=echo booted"}, pw2, io.Discard)
		pw2.Close()
		exited <- code
	}()
	var info testcluster.LabBMCReport
	if err := json.NewDecoder(pr).Decode(&info); err != nil {
		t.Fatalf("cluster bmc's report: %v", err)
	}
	go io.Copy(io.Discard, pr)
	if len(info.Systems) != 2 || info.Systems[0] != "long" || info.Logs["short"] != filepath.Join(dir, "bmc", "short.log") {
		t.Errorf("report: %+v", info)
	}
	inv := testfix.WriteFile(t, filepath.Join(dir, "inv.csv"), []byte("name,mac,bmc,bmc_driver\nlong,52:54:00:00:00:01,"+addr+",redfish\nshort,52:54:00:00:00:02,"+addr+",redfish\n"))
	power1 := func(op, node string) power.State {
		t.Helper()
		code, out, errs := runBootctl(t, context.Background(), "power", op, node, "--inventory", inv, "--credentials", creds, "--redfish-ca", info.CA,
			"--interval", "0s", "--timeout", "60s", "-o", "json")
		if code != 0 {
			t.Fatalf("power %s %s: exit %d: %s %s", op, node, code, out, errs)
		}
		return decodeJSONOut[powerResult](t, out).Result[0].State
	}
	power1("on", "long")
	power1("on", "short")
	if st := power1("status", "long"); st != power.On {
		t.Errorf("a running command reads %s", st)
	}
	testfix.WaitFor(t, "the short command to end and read off", 30*time.Second, func() bool { return power1("status", "short") == power.Off })
	if log, _ := os.ReadFile(info.Logs["short"]); !strings.Contains(string(log), "booted") {
		t.Errorf("short's output: %q", log)
	}
	power1("off", "long")
	if st := power1("status", "long"); st != power.Off {
		t.Errorf("a command powered off reads %s", st)
	}
	// The next command's shell writes its pid: the interrupt comes once it runs (CI once
	// interrupted it before the shell had written, and read an empty marker).
	if err := os.Remove(marker); err != nil {
		t.Fatal(err)
	}
	power1("on", "long")
	testfix.WaitFor(t, "the long command to start again", 30*time.Second, func() bool {
		data, _ := os.ReadFile(marker)
		var pid int
		_, err := fmt.Sscan(string(data), &pid)
		return err == nil
	})
	cancel()
	select {
	case code := <-exited:
		if code != 0 {
			t.Errorf("interrupted BMC: exit %d, want 0", code)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("cluster bmc did not end within 60 s of its interruption")
	}
	data, _ := os.ReadFile(marker)
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil || processAlive(pid) {
		t.Errorf("the long command (pid %q) still runs after its BMC ended", data)
	}
}

// processAlive reports whether pid runs (and is not a zombie).
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !strings.Contains(string(stat[strings.LastIndexByte(string(stat), ')')+1:]), " Z ")
}
