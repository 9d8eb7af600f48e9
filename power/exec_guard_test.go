package power

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bootfabric/bootfabric/internal/testenv"
)

// TestExecGuards: a value that would start a word with '-' is refused before anything runs (an
// ssh template would otherwise take it as an option and run a command), a '-' the template writes
// itself is an option as meant, and the password is hidden in a status output that goes into an
// error.
func TestExecGuards(t *testing.T) {
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	script := filepath.Join(dir, "bmc.sh")
	os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> "+ran+"\necho \"password is $BMC_PASSWORD, state unknown\"\n"), 0o755)
	ctx := context.Background()
	for _, v := range []ExecVars{{Node: "-oProxyCommand=touch /tmp/x"}, {BMC: "-oProxyCommand=x"}, {User: "-l"}} {
		e, err := NewExec(ExecTemplates{On: script + " {{.BMC}} {{.Node}} {{.User}}", Status: script + " {{.Node}} {{.BMC}} {{.User}}"}, v, "pw")
		if err != nil {
			t.Fatal(err)
		}
		if err := e.On(ctx); err == nil {
			t.Errorf("%+v: on ran", v)
		}
		if _, err := e.Status(ctx); err == nil || !strings.Contains(err.Error(), "would read as an option") {
			t.Errorf("%+v: status: %v, want refused as an option", v, err)
		}
	}
	if b, _ := os.ReadFile(ran); strings.Contains(string(b), "Proxy") {
		t.Errorf("a command ran with an option from a value: %q", b)
	}
	e, err := NewExec(ExecTemplates{Status: script + " -v --node={{.Node}}"}, ExecVars{Node: "n1"}, "hunter2")
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Status(ctx)
	if err == nil || strings.Contains(err.Error(), "hunter2") || !strings.Contains(err.Error(), "password is ***") {
		t.Errorf("status output in an error: %v, want the password hidden", err)
	}
	if b, _ := os.ReadFile(ran); !strings.Contains(string(b), "-v --node=n1") {
		t.Errorf("the template's own options: %q", b)
	}
}

// TestCredentialsOwner: a credentials file that another user owns is refused, as ssh refuses such
// a private key, even with mode 0600.
func TestCredentialsOwner(t *testing.T) {
	testenv.NeedRoot(t, "to give the file to another user")
	p := filepath.Join(t.TempDir(), "creds")
	if err := os.WriteFile(p, []byte("default: {user: a, password: b}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(p); err != nil {
		t.Fatalf("own file: %v", err)
	}
	if err := os.Chown(p, 4242, 4242); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadCredentials(p); err == nil || !strings.Contains(err.Error(), "owned by uid 4242") {
		t.Errorf("file of uid 4242: %v, want refused naming the owner", err)
	}
}
