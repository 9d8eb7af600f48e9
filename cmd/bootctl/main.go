// Command bootctl plans, simulates, serves and measures network boots of clusters.
//
// Results go to stdout (as a table, or as JSON/CSV/YAML with --output); logs go to stderr via zap.
// Bad input exits with status 2 and one line naming what is wrong; other failures exit 1.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/bootfabric/bootfabric/internal/progress"
)

func main() {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sigs
		signal.Stop(sigs) // a second signal ends bootctl at once
		cancel(interrupted{s})
	}()
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	cancel(nil)
	os.Exit(code)
}

// interrupted is the cause of the context's cancellation when a signal arrives.
type interrupted struct{ sig os.Signal }

func (i interrupted) Error() string { return "interrupted by " + i.sig.String() }

// interruptStatus is the exit status after an interruption: 128 + the signal's number, as a shell
// reports a process killed by it (130 for SIGINT, 143 for SIGTERM).
func interruptStatus(ctx context.Context) int {
	var in interrupted
	if errors.As(context.Cause(ctx), &in) {
		if s, ok := in.sig.(syscall.Signal); ok {
			return 128 + int(s)
		}
	}
	return 130
}

// env is what every command gets: its output streams and the logger built from --log-level.
type env struct {
	stdout, stderr io.Writer
	log            *zap.Logger
	// line is stderr as the logger and the progress bars share it: a log line erases a bar
	// rather than run into it.
	line *progress.Line
}

// run runs bootctl with args and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	e := &env{stdout: stdout, stderr: stderr, log: zap.NewNop(), line: progress.NewLine(stderr)}
	app := newApp(e)
	app.Setup()
	notFound := applyGrammar(app)
	err := app.RunContext(ctx, normalizeArgs(app, args))
	if err == nil {
		err = notFound()
	}
	_ = e.log.Sync()
	if err == nil {
		return 0
	}
	if ctx.Err() != nil {
		return interruptStatus(ctx) // the user asked for it: no "context canceled"
	}
	var ue *usageError
	var ce *commandError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		fmt.Fprintln(stderr, err)
	} else {
		fmt.Fprintln(stderr, "bootctl:", err)
	}
	var bad *badInputError
	if errors.As(err, &bad) || errors.As(err, &ue) || isFlagError(err) {
		return 2
	}
	return 1
}

// newApp builds bootctl's command tree around e.
func newApp(e *env) *cli.App {
	return &cli.App{
		Name:  "bootctl",
		Usage: "plan, simulate, serve and measure network boots of clusters",
		UsageText: "bootctl [--log-level LEVEL] COMMAND [FLAGS] [ARGS]\n" +
			"Flags may come anywhere on the line: before or after the command and its arguments.",
		Version:              version(),
		EnableBashCompletion: true,
		Writer:               e.stdout,
		ErrWriter:            e.stderr,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log level on stderr: debug, info, warn, error"},
		},
		Before: func(c *cli.Context) error {
			lvl, err := zapcore.ParseLevel(c.String("log-level"))
			if err != nil {
				return badInput("--log-level: %q is not one of debug, info, warn, error", c.String("log-level"))
			}
			cfg := zap.NewProductionEncoderConfig()
			cfg.EncodeTime = zapcore.ISO8601TimeEncoder
			core := zapcore.NewCore(zapcore.NewConsoleEncoder(cfg), zapcore.AddSync(e.line), lvl)
			e.log = zap.New(core)
			return nil
		},
		Commands:       commands(e),
		ExitErrHandler: func(*cli.Context, error) {}, // run decides the status
	}
}

// commands lists bootctl's commands; each lives in a file of its own.
func commands(e *env) []*cli.Command {
	return []*cli.Command{
		planCommand(e),
		topologyCommand(e),
		serveCommand(e),
		fleetCommand(e),
		statusCommand(e),
		nodeCommand(e),
		powerCommand(e),
		bootCommand(e),
		imageCommand(e),
		routeCommand(e),
		reportCommand(e),
		clusterCommand(e),
		simulateCommand(e),
		mcastCommand(e),
		fetchCommand(e),
		completionCommand(e),
		manCommand(e),
	}
}

// badInputError marks an error caused by the user's input: bootctl exits 2 for it.
type badInputError struct{ err error }

func (b *badInputError) Error() string { return b.err.Error() }
func (b *badInputError) Unwrap() error { return b.err }

// badInput returns a bad-input error with a formatted message (%w wraps as usual).
func badInput(format string, args ...any) error {
	return &badInputError{fmt.Errorf(format, args...)}
}

// asBadInput marks err, if not nil, as caused by the user's input.
func asBadInput(err error) error {
	if err == nil {
		return nil
	}
	return &badInputError{err}
}

// isFlagError reports errors that urfave/cli returns for malformed flags and arguments.
func isFlagError(err error) bool {
	var ee cli.ExitCoder
	if errors.As(err, &ee) {
		return false
	}
	msg := err.Error()
	for _, p := range []string{"flag provided but not defined", "invalid value", "flag needs an argument", "Required flag", "No help topic"} {
		if strings.Contains(msg, p) {
			return true
		}
	}
	return false
}
