package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// runner runs host commands; tests and dry runs may replace it. RunInput gives the command stdin
// (a batch of ip or tc commands).
type runner interface {
	Run(ctx context.Context, argv ...string) (string, error)
	RunInput(ctx context.Context, stdin string, argv ...string) (string, error)
}

type execRunner struct{}

func (r execRunner) Run(ctx context.Context, argv ...string) (string, error) {
	return r.RunInput(ctx, "", argv...)
}

func (execRunner) RunInput(ctx context.Context, stdin string, argv ...string) (string, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s: %w: %s", strings.Join(argv, " "), err, strings.TrimSpace(errb.String()))
	}
	return out.String(), nil
}
