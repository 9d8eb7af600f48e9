package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// TestGrammarUsageErrors: every usage error exits 2 with one line on stderr naming the command,
// the word or flag at fault and, where one is close, what was meant.
func TestGrammarUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // the one line on stderr
	}{
		{"unknown command", []string{"plna"}, `bootctl: unknown command "plna"; did you mean "plan"?`},
		{"unknown command far from any", []string{"frobnicate"}, `bootctl: unknown command "frobnicate"; commands: plan, topology,`},
		{"unknown subcommand", []string{"topology", "shwo"}, `bootctl: unknown command "shwo" for "bootctl topology"; did you mean "show"?`},
		{"help on an unknown command", []string{"help", "simualte"}, `bootctl: unknown command "simualte"; did you mean "simulate"?`},
		{"stray argument", []string{"plan", "mini"}, `bootctl plan: unexpected argument "mini" (did you mean --topology mini?)`},
		{"stray format", []string{"route", "-t", "fat2d:4", "json"}, `bootctl route: unexpected argument "json" (did you mean --output json?)`},
		{"stray spec", []string{"route", "fat2d:16"}, `bootctl route: unexpected argument "fat2d:16" (did you mean --topology fat2d:16?)`},
		{"stray choice", []string{"simulate", "multicast"}, `bootctl simulate: unexpected argument "multicast" (did you mean --delivery multicast?)`},
		{"a word of the help is no choice", []string{"plan", "core"}, `bootctl plan: unexpected argument "core"`},
		{"stray word", []string{"mcast", "-t", "mini", "now"}, `bootctl mcast: unexpected argument "now"`},
		{"boolean value after a space", []string{"report", "--flow", "false"}, `bootctl report: unexpected argument "false" (a true/false flag takes its value after =, e.g. --flow=false)`},
		{"stray after a subcommand", []string{"image", "list", "--store", "x", "extra"}, `bootctl image list: unexpected argument "extra"`},
		{"too many arguments", []string{"topology", "show", "mini", "sunway"}, `bootctl topology show: unexpected argument "sunway" (takes PRESET|FILE)`},
		{"missing argument", []string{"topology", "show"}, `bootctl topology show: missing argument: PRESET|FILE`},
		{"flag after --", []string{"plan", "--", "--batch"}, `bootctl plan: unexpected argument "--batch" (flags go before --)`},
		{"unknown flag", []string{"plan", "--outptu", "json"}, `bootctl plan: flag provided but not defined: -outptu (did you mean --output?)`},
		{"unknown flag after an argument", []string{"topology", "show", "mini", "--ouput", "yaml"}, `flag provided but not defined: -ouput (did you mean --output?)`},
		{"unknown global flag", []string{"--log-levl", "debug", "plan"}, `flag provided but not defined: -log-levl (did you mean --log-level?)`},
		{"flag without its value", []string{"plan", "--batch"}, `bootctl plan: --batch needs a value`},
		{"missing required flag", []string{"route"}, `bootctl route: --topology is required`},
		{"missing required flag with env", []string{"image", "list"}, `bootctl image list: --store (or $BOOTCTL_IMAGES) is required`},
		{"duration without unit", []string{"simulate", "--rtt", "5"}, `bootctl simulate: --rtt: "5" has no unit; write 5ms or 5s`},
		{"duration malformed", []string{"status", "-s", "http://x", "--timeout", "5 s"}, `bootctl status: --timeout: "5 s" is not a duration; write a number and a unit`},
		{"integer malformed", []string{"simulate", "--blksize", "1k"}, `bootctl simulate: --blksize: "1k" is not a whole number`},
		{"float malformed", []string{"report", "--upgrade-factor", "x10"}, `bootctl report: --upgrade-factor: "x10" is not a number`},
		{"bad log level after the command", []string{"plan", "--log-level", "loud"}, `--log-level: "loud" is not one of debug, info, warn, error`},
		{"unknown shell", []string{"completion", "tcsh"}, `bootctl completion: "tcsh" is not one of bash, zsh, fish`},
		{"absurd size", []string{"plan", "--image-size", "99999999999999999999TB"}, `--image-size: size "99999999999999999999TB": larger than the 1 PB`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("BOOTCTL_IMAGES", "")
			os.Unsetenv("BOOTCTL_IMAGES")
			code, out, errs := bootctl(t, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2; stderr %q", code, errs)
			}
			if out != "" {
				t.Errorf("stdout not empty: %.200q", out)
			}
			if lines := strings.Split(strings.TrimSpace(errs), "\n"); len(lines) != 1 {
				t.Errorf("stderr has %d lines, want 1:\n%s", len(lines), errs)
			}
			if !strings.Contains(errs, tc.want) {
				t.Errorf("stderr %q does not contain %q", errs, tc.want)
			}
		})
	}
}

// TestGrammarFlagsAnywhere: the global flags before or after the command, a command's own flags
// before the command or after its arguments.
func TestGrammarFlagsAnywhere(t *testing.T) {
	plan := []string{"--topology", "mini", "--algo", "bcda", "--batch", "1"}
	want := func(t *testing.T, args ...string) string {
		t.Helper()
		code, out, errs := bootctl(t, args...)
		if code != 0 {
			t.Fatalf("bootctl %s: exit %d: %s", strings.Join(args, " "), code, errs)
		}
		return out
	}
	jsonPlan := want(t, append([]string{"plan", "-o", "json"}, plan...)...)
	tests := []struct {
		name string
		args []string
		same string // stdout must equal this
		logs bool   // stderr must have debug lines
	}{
		{"log level before the command", append([]string{"--log-level", "debug", "plan", "-o", "json"}, plan...), jsonPlan, true},
		{"log level after the command", append(append([]string{"plan", "-o", "json"}, plan...), "--log-level", "debug"), jsonPlan, true},
		{"log level with = after the command", append([]string{"plan", "--log-level=debug", "-o", "json"}, plan...), jsonPlan, true},
		{"output before the command", append([]string{"-o", "json", "plan"}, plan...), jsonPlan, false},
		{"output with = before the command", append([]string{"--output=json", "plan"}, plan...), jsonPlan, false},
		{"flags between command and subcommand", []string{"topology", "-o", "json", "show", "mini"}, want(t, "topology", "show", "-o", "json", "mini"), false},
		{"flags after the argument", []string{"topology", "show", "mini", "-o", "json", "--log-level", "warn"}, want(t, "topology", "show", "-o", "json", "mini"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := bootctl(t, tc.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			if out != tc.same {
				t.Errorf("stdout differs:\n%.300s\nwant:\n%.300s", out, tc.same)
			}
			if got := strings.Contains(errs, "debug"); got != tc.logs {
				t.Errorf("debug logs %v, want %v: %q", got, tc.logs, errs)
			}
		})
	}
}

func TestGrammarNormalizeArgs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"bootctl plan --log-level debug", "bootctl --log-level debug plan"},
		{"bootctl -o json plan -t mini", "bootctl plan -o json -t mini"},
		{"bootctl topology show sunway -o yaml", "bootctl topology show -o yaml sunway"},
		{"bootctl report --out - --log-level=warn", "bootctl --log-level=warn report --out -"},
		{"bootctl report --flow --batch 1", "bootctl report --flow --batch 1"},
		{"bootctl plan -- --batch", "bootctl plan -- --batch"},
		{"bootctl plan -h", "bootctl plan -h"},
		{"bootctl plan --generate-bash-completion", "bootctl plan --generate-bash-completion"},
		{"bootctl image --store s list", "bootctl image list --store s"},
	}
	for _, tc := range tests {
		app := newApp(&env{stdout: &strings.Builder{}, stderr: &strings.Builder{}})
		app.Setup()
		got := strings.Join(normalizeArgs(app, strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("normalizeArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestCompletionAndMan: the completion scripts are valid for their shell and the generated
// completion and man page cover the command tree.
func TestCompletionAndMan(t *testing.T) {
	for _, tc := range []struct {
		shell string
		want  []string
	}{
		{"bash", []string{"complete -o bashdefault", "--generate-bash-completion"}},
		{"zsh", []string{"#compdef bootctl", "--generate-bash-completion"}},
		{"fish", []string{"complete -c bootctl", "plan", "simulate", "topology", "show", "image-size"}},
	} {
		t.Run(tc.shell, func(t *testing.T) {
			code, out, errs := bootctl(t, "completion", tc.shell)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("script lacks %q", w)
				}
			}
			if sh, err := exec.LookPath(tc.shell); err == nil {
				p := writeFile(t, "completion."+tc.shell, out)
				if msg, err := exec.Command(sh, "-n", p).CombinedOutput(); err != nil {
					t.Errorf("%s -n: %v\n%s", tc.shell, err, msg)
				}
			}
		})
	}
	code, out, errs := bootctl(t, "man")
	if code != 0 {
		t.Fatalf("man: exit %d: %s", code, errs)
	}
	for _, w := range []string{".TH", "bootctl", "plan", "simulate", "--image-size", "completion"} {
		if !strings.Contains(out, w) {
			t.Errorf("man page lacks %q", w)
		}
	}
	// bootctl(1), as the README says.
	if !strings.Contains(out, `.TH bootctl 1`) {
		t.Errorf("man page is not in section 1: %q", strings.SplitN(out[strings.Index(out, ".TH"):], "\n", 2)[0])
	}
}

// TestCompletionHeaders: the scripts tell the admin to source them from their own shell's rc
// file, never to install them system-wide, where they would replace systemd-boot's bootctl
// completion for every user.
func TestCompletionHeaders(t *testing.T) {
	for _, tc := range []struct{ shell, want string }{
		{"bash", "source <(bootctl completion bash)"},
		{"zsh", "source <(bootctl completion zsh)"},
	} {
		_, out, _ := bootctl(t, "completion", tc.shell)
		var header []string
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "#") {
				header = append(header, l)
			}
		}
		h := strings.Join(header, "\n")
		if !strings.Contains(h, tc.want) || strings.Contains(h, "> /etc/") || strings.Contains(h, "> \"${fpath") {
			t.Errorf("%s header:\n%s\nwant %q and no install into a system directory", tc.shell, h, tc.want)
		}
	}
}

// TestBinaryVersionAndInterrupt runs the built binary: --version names the commit it was built
// from, and an interrupted command exits 128 + the signal without "context canceled".
func TestBinaryVersionAndInterrupt(t *testing.T) {
	if testing.Short() {
		t.Skip("builds bootctl")
	}
	bin := filepath.Join(t.TempDir(), "bootctl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Run("version", func(t *testing.T) {
		top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
		if err != nil {
			t.Skipf("not in a git work tree: %v", err)
		}
		if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err != nil || !fi.IsDir() {
			t.Skip("go build stamps the commit only in a main work tree (.git a directory), not in a linked worktree")
		}
		for _, args := range [][]string{{"--version"}, {"-v"}, {"plan", "--version"}} {
			out, err := exec.Command(bin, args...).Output()
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			line := string(out)
			m := regexp.MustCompile(`^bootctl version (\(devel\)|v\S+), commit ([0-9a-f]{40})`).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("%v: %q, want bootctl version VERSION, commit HASH", args, line)
			}
			// Others may commit while the test runs: the commit is HEAD or an ancestor of it.
			if err := exec.Command("git", "merge-base", "--is-ancestor", m[2], "HEAD").Run(); err != nil {
				t.Errorf("%v: %q: commit %s is not in this repository's history: %v", args, line, m[2], err)
			}
		}
	})
	// What the completion scripts ask bootctl for (urfave/cli reads os.Args for it, so only the
	// binary answers).
	t.Run("completion protocol", func(t *testing.T) {
		for _, tc := range []struct {
			args []string
			want []string
		}{
			{[]string{"--generate-bash-completion"}, []string{"plan\n", "completion\n", "man\n"}},
			{[]string{"topology", "--generate-bash-completion"}, []string{"show\n"}},
			{[]string{"plan", "--im", "--generate-bash-completion"}, []string{"--image-size\n"}},
		} {
			out, err := exec.Command(bin, tc.args...).Output()
			if err != nil {
				t.Fatalf("%v: %v", tc.args, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(string(out), w) {
					t.Errorf("%v: %q lacks %q", tc.args, out, w)
				}
			}
		}
	})
	// The bash script, sourced in bash, completes commands and flags through the binary.
	t.Run("bash completes", func(t *testing.T) {
		if _, err := exec.LookPath("bash"); err != nil {
			t.Skip("no bash")
		}
		script := `source <(bootctl completion bash)
COMP_WORDS=(bootctl pl); COMP_CWORD=1; _bootctl_complete; echo "${COMPREPLY[*]}"
COMP_WORDS=(bootctl topology s); COMP_CWORD=2; _bootctl_complete; echo "${COMPREPLY[*]}"
COMP_WORDS=(bootctl plan --image); COMP_CWORD=2; _bootctl_complete; echo "${COMPREPLY[*]}"`
		cmd := exec.Command("bash", "--norc", "-c", script)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		out, err := cmd.CombinedOutput()
		if want := "plan\nshow\n--image-size\n"; err != nil || string(out) != want {
			t.Errorf("completions %q (%v), want %q", out, err, want)
		}
	})
	// A server that never answers: status waits until interrupted. bootctl handles signals from
	// before its first request, so the signal is sent once a request has arrived (or, while
	// watching, has ended: bootctl is then waiting for the next round).
	for _, tc := range []struct {
		name  string
		sig   syscall.Signal
		args  []string
		ended bool
		want  int
	}{
		{"SIGINT", syscall.SIGINT, []string{"status", "--timeout", "1m"}, false, 130},
		{"SIGTERM", syscall.SIGTERM, []string{"status", "--timeout", "1m"}, false, 143},
		{"SIGINT while watching", syscall.SIGINT, []string{"status", "--timeout", "100ms", "--watch", "1"}, true, 130},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arrived, ended := make(chan struct{}, 1), make(chan struct{}, 1)
			hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				select {
				case arrived <- struct{}{}:
				default:
				}
				<-r.Context().Done()
				select {
				case ended <- struct{}{}:
				default:
				}
			}))
			defer hang.Close()
			cmd := exec.Command(bin, append(tc.args, "-s", hang.URL)...)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			wait := arrived
			if tc.ended {
				wait = ended
			}
			select {
			case <-wait:
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("no request from bootctl within 30 s; stderr %q", stderr.String())
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.want {
				t.Errorf("exit %d (%v), want %d; stderr %q", code, err, tc.want, stderr.String())
			}
			if strings.Contains(stderr.String(), "context canceled") {
				t.Errorf("stderr says %q", stderr.String())
			}
		})
	}
}

// TestMachineFileErrorsInUsersWords: a mistake in a machine file is reported by file, line and
// field as written, with what the field wants, never a Go type.
func TestMachineFileErrorsInUsersWords(t *testing.T) {
	good := "name: x\nlevels:\n  - name: board\n    count: 2\n    uplink: {segment: N2, capacity_mbps: 1000, latency_us: 1}\n" +
		"  - name: node\n    count: 2\n    uplink: {segment: N1, capacity_mbps: 1000}\nservers:\n  count: 1\n  nic: {segment: N5, capacity_mbps: 1000}\n"
	tests := []struct{ name, from, to, want string }{
		{"not a number", "capacity_mbps: 1000, latency_us", "capacity_mbps: 1Gb, latency_us", `:5: levels[0].uplink.capacity_mbps: "1Gb" is not a number`},
		{"misspelt field", "latency_us: 1", "latencyus: 1", `:5: levels[0].uplink: unknown field "latencyus" (did you mean latency_us?)`},
		{"list for a mapping", "nic: {segment: N5, capacity_mbps: 1000}", "nic: [N5, 1000]", `:11: servers.nic: want a mapping (name: value lines), not a list`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeFile(t, "m.yaml", strings.Replace(good, tc.from, tc.to, 1))
			code, _, errs := bootctl(t, "plan", "--topology", p)
			if code != 2 || !strings.Contains(errs, p+tc.want) {
				t.Errorf("exit %d, %q; want 2 and %q", code, errs, p+tc.want)
			}
			for _, goWords := range []string{"!!", "unmarshal", "topology.", "float64", "not found in type"} {
				if strings.Contains(errs, goWords) {
					t.Errorf("%q speaks Go: %q", errs, goWords)
				}
			}
		})
	}
	if code, _, errs := bootctl(t, "plan", "--topology", writeFile(t, "m.yaml", good), "--batch", "1", "-o", "json"); code != 0 {
		t.Errorf("the good file: exit %d: %s", code, errs)
	}
}

// TestNoFlagLeftRequired: applyGrammar takes over every Required flag (unrequire), so that
// urfave/cli never answers a missing one with the whole help text.
func TestNoFlagLeftRequired(t *testing.T) {
	app := newApp(&env{stdout: &strings.Builder{}, stderr: &strings.Builder{}})
	app.Setup()
	applyGrammar(app)
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				if r, ok := f.(cli.RequiredFlag); ok && r.IsRequired() {
					t.Errorf("%s %s: --%s is still Required (a %T)", path, c.Name, f.Names()[0], f)
				}
			}
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	walk("bootctl", app.Commands)
}

// TestChoicesInHelp: every choice of a flag is said in its help, so that what the help lists and
// what a stray argument is matched against cannot drift apart.
func TestChoicesInHelp(t *testing.T) {
	app := newApp(&env{stdout: &strings.Builder{}, stderr: &strings.Builder{}})
	app.Setup()
	n := 0
	var walk func(path string, cmds []*cli.Command)
	walk = func(path string, cmds []*cli.Command) {
		for _, c := range cmds {
			for _, f := range c.Flags {
				cf, ok := f.(*choiceFlag)
				if !ok {
					continue
				}
				n++
				for _, v := range cf.Choices {
					if !strings.Contains(cf.Usage, v) {
						t.Errorf("%s %s --%s: choice %q is not in its help %q", path, c.Name, cf.Name, v, cf.Usage)
					}
				}
			}
			walk(path+" "+c.Name, c.Subcommands)
		}
	}
	walk("bootctl", app.Commands)
	if n == 0 {
		t.Error("no flag with choices")
	}
}
