// Command bootfetch is `bootctl fetch` alone, in a binary small enough for a node's first-stage
// initramfs (bootctl links the servers, the simulator and the fleet: 65 MB): it fetches the node's
// root image from its peers and the boot server, every piece checked, and keeps seeding it. Its
// flags, checks and output are bootctl fetch's own (delivery/fetchcli). Build it static:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' ./cmd/bootfetch
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/bootfabric/bootfabric/delivery/fetchcli"
	"github.com/bootfabric/bootfabric/internal/cligrammar"
	"github.com/urfave/cli/v2"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs bootfetch with args and returns the exit status: 0, 1 for a failed fetch, 2 for bad
// flags.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cmd := fetchcli.Command(stdout)
	cmd.UsageText = "bootfetch " + cmd.UsageText
	app := &cli.App{
		Name:            "bootfetch",
		Usage:           cmd.Usage,
		Writer:          stdout,
		ErrWriter:       stderr,
		Commands:        []*cli.Command{cmd},
		HideHelpCommand: true,
		ExitErrHandler:  func(*cli.Context, error) {}, // run decides the status
	}
	app.Setup()
	notFound := cligrammar.Apply(app)
	// The one command is implied: `bootfetch --server ...` is `bootctl fetch --server ...`.
	line := append([]string{args[0], cmd.Name}, args[1:]...)
	err := app.RunContext(ctx, cligrammar.NormalizeArgs(app, line))
	if err == nil {
		err = notFound()
	}
	if err == nil {
		return 0
	}
	var ue *cligrammar.UsageError
	var ce *cligrammar.CommandError
	if errors.As(err, &ue) || errors.As(err, &ce) {
		fmt.Fprintln(stderr, err) // named already: "bootfetch fetch: ..."
	} else {
		fmt.Fprintln(stderr, "bootfetch:", err)
	}
	if ue != nil {
		return 2
	}
	return 1
}
