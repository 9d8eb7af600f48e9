package power

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"text/template"
	"time"
)

// Exec is a Controller that runs a command per action, from templates such as Warewulf's
// ipmitool template: for controllers no driver here speaks. Each template is split into words
// first and each word rendered on its own, so a value never becomes two arguments and no shell is
// involved. The words may use {{.Node}}, {{.BMC}}, {{.User}} and {{.Mode}}; the password is never
// on the command line (where ps shows it) but in the environment, as BMC_PASSWORD and as
// IPMI_PASSWORD (ipmitool -E reads it).
type Exec struct {
	cmds map[Op][]execWord
	vars ExecVars
	pass string
}

// execWord is one word of a command template. option says whether the template itself writes a
// leading '-': a word that only a value makes start with '-' would pass that value to the command
// as an option (ssh's -oProxyCommand=...), and is refused.
type execWord struct {
	tpl    *template.Template
	option bool
}

// ExecVars are the values a template may use.
type ExecVars struct {
	Node, BMC, User string
	Mode            BootMode
}

// ExecTemplates are the command templates, one per action. Status's command prints the state:
// its output's last word "on" or "off" (ipmitool's "Chassis Power is on").
type ExecTemplates struct {
	On     string `yaml:"on"`
	Off    string `yaml:"off"`
	Cycle  string `yaml:"cycle"`
	Status string `yaml:"status"`
	PXE    string `yaml:"pxe"`
}

// NewExec parses the templates for one node. A template left empty makes its action fail with
// that said.
func NewExec(t ExecTemplates, vars ExecVars, password string) (*Exec, error) {
	e := &Exec{cmds: map[Op][]execWord{}, vars: vars, pass: password}
	for op, text := range map[Op]string{OpOn: t.On, OpOff: t.Off, OpCycle: t.Cycle, OpStatus: t.Status, OpPXE: t.PXE} {
		for _, w := range strings.Fields(text) {
			tpl, err := template.New(string(op)).Option("missingkey=error").Parse(w)
			if err != nil {
				return nil, fmt.Errorf("exec template %s: %w", op, err)
			}
			e.cmds[op] = append(e.cmds[op], execWord{tpl: tpl, option: strings.HasPrefix(w, "-")})
		}
	}
	return e, nil
}

// run renders and runs op's command and returns its output.
func (e *Exec) run(ctx context.Context, op Op, mode BootMode) (string, error) {
	words := e.cmds[op]
	if len(words) == 0 {
		return "", &Error{Class: Failed, Op: string(op), Err: errors.New("no command template for it")}
	}
	vars := e.vars
	vars.Mode = mode
	argv := make([]string, len(words))
	for i, w := range words {
		var b strings.Builder
		if err := w.tpl.Execute(&b, vars); err != nil {
			return "", &Error{Class: Failed, Op: string(op), Err: fmt.Errorf("exec template: %w", err)}
		}
		argv[i] = b.String()
		if !w.option && strings.HasPrefix(argv[i], "-") {
			return "", &Error{Class: Failed, Op: string(op), Err: fmt.Errorf("exec template: word %d renders to %q, which the command would read as an option: a node or BMC value may not start with '-'", i+1, e.redact(argv[i]))}
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "BMC_PASSWORD="+e.pass, "IPMI_PASSWORD="+e.pass)
	// A timeout kills the command's whole process group: a script's children would keep its
	// output open, and the wait with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		return "", &Error{Class: TimedOut, Op: string(op), Err: fmt.Errorf("%s: %w", argv[0], ctx.Err())}
	}
	if err != nil {
		msg := e.redact(strings.TrimSpace(errb.String()))
		if len(msg) > 200 {
			msg = msg[len(msg)-200:]
		}
		return "", &Error{Class: Failed, Op: string(op), Err: fmt.Errorf("%s: %v: %s", argv[0], err, msg)}
	}
	return out.String(), nil
}

// redact hides the password in what a command printed, before it goes into an error, a log or
// JSON output.
func (e *Exec) redact(s string) string {
	if e.pass == "" {
		return s
	}
	return strings.ReplaceAll(s, e.pass, "***")
}

// On implements Controller.
func (e *Exec) On(ctx context.Context) error { _, err := e.run(ctx, OpOn, ""); return err }

// Off implements Controller.
func (e *Exec) Off(ctx context.Context) error { _, err := e.run(ctx, OpOff, ""); return err }

// Cycle implements Controller.
func (e *Exec) Cycle(ctx context.Context) error { _, err := e.run(ctx, OpCycle, ""); return err }

// PXENext implements Controller.
func (e *Exec) PXENext(ctx context.Context, mode BootMode) error {
	_, err := e.run(ctx, OpPXE, mode)
	return err
}

// Status implements Controller: the last word of the command's output.
func (e *Exec) Status(ctx context.Context) (State, error) {
	out, err := e.run(ctx, OpStatus, "")
	if err != nil {
		return "", err
	}
	words := strings.Fields(strings.ToLower(out))
	if len(words) > 0 {
		switch State(words[len(words)-1]) {
		case On:
			return On, nil
		case Off:
			return Off, nil
		}
	}
	return "", &Error{Class: Failed, Op: string(OpStatus), Err: fmt.Errorf("status output %q does not end in on or off", e.redact(strings.TrimSpace(out)))}
}
