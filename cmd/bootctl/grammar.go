package main

// bootctl's grammar is internal/cligrammar's; these names keep the command files short.

import (
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/internal/cligrammar"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/urfave/cli/v2"
)

type (
	usageError   = cligrammar.UsageError
	commandError = cligrammar.CommandError
	choiceFlag   = cligrammar.ChoiceFlag
)

// applyGrammar applies bootctl's grammar to app: a stray preset or topology spec is taken for a
// --topology value.
func applyGrammar(app *cli.App) (notFound func() error) {
	return cligrammar.Apply(app, cligrammar.Hint{Flag: "topology", Matches: func(w string) bool {
		return slices.Contains(topology.Presets(), w) || strings.Contains(w, ":") // a preset or a spec such as fat2d:16
	}})
}

func normalizeArgs(app *cli.App, args []string) []string { return cligrammar.NormalizeArgs(app, args) }

func withChoices(f cli.StringFlag, choices ...string) *choiceFlag {
	return cligrammar.WithChoices(f, choices...)
}
