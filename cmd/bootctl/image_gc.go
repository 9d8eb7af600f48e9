package main

import (
	"errors"
	"fmt"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/suggest"
	"github.com/urfave/cli/v2"
)

func imageDeleteCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "delete",
		Usage:     "remove a profile from the store (its files stay until image gc); a running serve stops serving it at once",
		ArgsUsage: "NAME",
		Flags:     []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml")},
		Action:    func(c *cli.Context) error { return imageDelete(e, c) },
	}
}

// imageDeleteResult is what image delete reports as data.
type imageDeleteResult struct {
	Deleted images.Summary `json:"deleted"`
}

// imageDelete removes the profile NAME; an unknown name is bad input, with the nearest name.
func imageDelete(e *env, c *cli.Context) error {
	format := c.String("output")
	if c.NArg() != 1 {
		return badInput("image delete: give one profile NAME (%d arguments given)", c.NArg())
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	name := c.Args().First()
	p, err := st.Delete(name)
	if errors.Is(err, images.ErrNotFound) {
		hint := ""
		if n := suggest.Nearest(name, st.ProfileNames()); n != "" {
			hint = fmt.Sprintf("; did you mean %q?", n)
		}
		return badInput("image delete: no profile %q in the store %s%s", name, st.Dir(), hint)
	}
	if err != nil {
		return err
	}
	if format != "table" {
		return writeData(e.stdout, format, imageDeleteResult{Deleted: p.Summarize()})
	}
	fmt.Fprintf(e.stdout, "deleted profile %s; its files stay in the store until bootctl image gc --store %s\n", p.Name, st.Dir())
	return nil
}

func imageGCCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "gc",
		Usage: "remove the stored files no profile references (old versions of replaced profiles, deleted profiles)",
		Flags: []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml"),
			&cli.BoolFlag{Name: "dry-run", Usage: "list what would be removed, remove nothing"}},
		Action: func(c *cli.Context) error { return imageGC(e, c) },
	}
}

// imageGC removes (or, with --dry-run, lists) the unreferenced blobs and the bytes freed.
func imageGC(e *env, c *cli.Context) error {
	format := c.String("output")
	st, err := openStore(c)
	if err != nil {
		return err
	}
	res, err := st.GC(c.Bool("dry-run"))
	if err != nil {
		return err
	}
	return writeResult(e.stdout, format, res, res.WriteText)
}
