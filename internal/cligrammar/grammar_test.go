package cligrammar

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// testApp is a small command tree: "tool plan [--batch N] [-o FMT] [--topology T]", "tool get NAME"
// with a required --store, and "tool image list" under a group.
func testApp(ran *string) *cli.App {
	act := func(c *cli.Context) error {
		*ran = c.Command.Name + " " + strings.Join(c.Args().Slice(), ",")
		return nil
	}
	app := &cli.App{
		Name: "tool", Writer: io.Discard, ErrWriter: io.Discard,
		Flags: []cli.Flag{&cli.StringFlag{Name: "log-level"}},
		Commands: []*cli.Command{
			{Name: "plan", Action: act, Flags: []cli.Flag{
				&cli.IntFlag{Name: "batch"}, &cli.DurationFlag{Name: "rtt"}, &cli.BoolFlag{Name: "flow"},
				WithChoices(cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "table"}, "table", "json"),
				&ChoiceFlag{StringFlag: cli.StringFlag{Name: "unit", Value: "node"}, Choices: []string{"node", "board"}, Strict: true},
				&cli.StringFlag{Name: "topology"}}},
			{Name: "get", ArgsUsage: "NAME [MORE...]", Action: act, Flags: []cli.Flag{
				&cli.StringFlag{Name: "store", Required: true, EnvVars: []string{"CLIGRAMMAR_TEST_STORE"}}}},
			{Name: "image", Flags: []cli.Flag{&cli.StringFlag{Name: "dir"}}, Subcommands: []*cli.Command{
				{Name: "list", Action: act, Flags: []cli.Flag{&cli.StringFlag{Name: "dir"}}}}},
		},
	}
	app.Setup()
	return app
}

func runTool(t *testing.T, line string) (ran string, err error) {
	t.Helper()
	app := testApp(&ran)
	notFound := Apply(app, Hint{Flag: "topology", Matches: func(w string) bool { return strings.Contains(w, ":") }})
	err = app.RunContext(context.Background(), NormalizeArgs(app, strings.Fields(line)))
	if err == nil {
		err = notFound()
	}
	return ran, err
}

func TestApplyUsageErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{"tool plna", `tool: unknown command "plna"; did you mean "plan"?`},
		{"tool xyzzy", `tool: unknown command "xyzzy"; commands: plan, get, image`},
		{"tool image lst", `tool: unknown command "lst" for "tool image"; did you mean "list"?`},
		{"tool plan extra", `tool plan: unexpected argument "extra"`},
		{"tool plan json", `tool plan: unexpected argument "json" (did you mean --output json?)`},
		{"tool plan fat2d:16", `tool plan: unexpected argument "fat2d:16" (did you mean --topology fat2d:16?)`},
		{"tool plan true", `tool plan: unexpected argument "true" (a true/false flag takes its value after =, e.g. --flow=true)`},
		{"tool plan -- -x", `tool plan: unexpected argument "-x" (flags go before --)`},
		{"tool get", `tool get: missing argument: NAME [MORE...]`},
		{"tool get a", `tool get: --store (or $CLIGRAMMAR_TEST_STORE) is required`},
		{"tool plan --bach 3", `tool plan: flag provided but not defined: -bach (did you mean --batch?)`},
		{"tool plan --batch", `tool plan: --batch needs a value`},
		{"tool plan --batch x", `tool plan: --batch: "x" is not a whole number`},
		{"tool plan --rtt 5", `tool plan: --rtt: "5" has no unit; write 5ms or 5s (units: ns, us, ms, s, m, h)`},
		{"tool plan --unit rack", `tool plan: --unit: "rack" is not one of node, board`},
		{"tool plan extra --unit rack", `tool plan: unexpected argument "extra"`}, // the arguments first
		{"tool plan --rtt 5q", `tool plan: --rtt: "5q" is not a duration; write a number and a unit, e.g. 300ms, 2s, 1m30s`},
	}
	for _, tc := range tests {
		_, err := runTool(t, tc.line)
		var ue *UsageError
		if !errors.As(err, &ue) || err.Error() != tc.want {
			t.Errorf("%s:\n got %v\nwant %s", tc.line, err, tc.want)
		}
	}
}

func TestApplyRuns(t *testing.T) {
	tests := []struct{ line, want string }{
		{"tool plan -o json --log-level debug", "plan "},
		{"tool plan -o yaml --unit board", "plan "}, // only a strict flag is checked
		{"tool get a b --store s", "get a,b"},
		{"tool --store s get a", "get a"},
		{"tool image --dir d list", "list "},
	}
	for _, tc := range tests {
		ran, err := runTool(t, tc.line)
		if err != nil || ran != tc.want {
			t.Errorf("%s: ran %q, %v; want %q", tc.line, ran, err, tc.want)
		}
	}
}

func TestNormalizeArgs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"tool plan --log-level debug", "tool --log-level debug plan"},
		{"tool -o json plan --batch 1", "tool plan -o json --batch 1"},
		{"tool get a --store s", "tool get --store s a"},
		{"tool plan --log-level=warn --flow", "tool --log-level=warn plan --flow"},
		{"tool plan -- --batch", "tool plan -- --batch"},
		{"tool plan -h", "tool plan -h"},
		{"tool plan " + CompletionFlag, "tool plan " + CompletionFlag},
		{"tool image --dir d list", "tool image list --dir d"},
	}
	for _, tc := range tests {
		var ran string
		got := strings.Join(NormalizeArgs(testApp(&ran), strings.Fields(tc.in)), " ")
		if got != tc.want {
			t.Errorf("NormalizeArgs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCommandErrorNamesCommand(t *testing.T) {
	app := testApp(new(string))
	app.Commands[0].Action = func(*cli.Context) error { return errors.New("boom") }
	Apply(app)
	err := app.RunContext(context.Background(), []string{"tool", "plan"})
	var ce *CommandError
	if !errors.As(err, &ce) || err.Error() != "tool plan: boom" {
		t.Errorf("got %v, want tool plan: boom as a CommandError", err)
	}
}
