package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
	"golang.org/x/term"
	"gopkg.in/yaml.v3"
)

// outputFlag is the --output flag of a command that supports the given formats (the first is the
// default). It is strict: the grammar refuses another value before the command runs, so that the
// command reads c.String("output") as it is.
func outputFlag(formats ...string) *choiceFlag {
	f := withChoices(cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: formats[0],
		Usage: "result format: " + strings.Join(formats, ", ")}, formats...)
	f.Strict = true
	return f
}

// writeJSON writes v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeYAML writes v as YAML with the same field names and order as its JSON (the JSON is YAML
// already; only the style changes from flow to block).
func writeYAML(w io.Writer, v any) error {
	js, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(js, &doc); err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	blockStyle(&doc)
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return err
	}
	return enc.Close()
}

func blockStyle(n *yaml.Node) {
	n.Style = 0
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		switch strings.ToLower(n.Value) {
		case "y", "n", "yes", "no", "on", "off":
			n.Style = yaml.DoubleQuotedStyle // a string to YAML 1.2, but a boolean to YAML 1.1 readers
		}
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// writeResult writes v in format: as JSON or YAML, or as a table by table, the result's own layout.
func writeResult(w io.Writer, format string, v any, table func(io.Writer) error) error {
	if format != "table" {
		return writeData(w, format, v)
	}
	return table(w)
}

// writeData writes v in a structured format: json or yaml.
func writeData(w io.Writer, format string, v any) error {
	if format == "yaml" {
		return writeYAML(w, v)
	}
	return writeJSON(w, v)
}

// isTerminal reports whether w is a terminal, where progress may be shown.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
