package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/urfave/cli/v2"
)

func storeFlag() cli.Flag {
	return &cli.StringFlag{Name: "store", EnvVars: []string{"BOOTCTL_IMAGES"}, Required: true,
		Usage: "image store directory (image add creates it)"}
}

func openStore(c *cli.Context) (*images.Store, error) {
	st, err := images.Open(c.String("store"))
	if err != nil {
		return nil, asBadInput(err)
	}
	return st, nil
}

func imageCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "manage boot profiles (kernel, initrd, command line, boot files) in an image store",
		Subcommands: []*cli.Command{imageAddCommand(e), imageImportCommand(e), imageListCommand(e), imageVerifyCommand(e),
			imageDeleteCommand(e), imageGCCommand(e)},
	}
}

func imageAddCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "add",
		Usage: "add a profile (or replace the profile of the same name); files are stored by sha256",
		Flags: []cli.Flag{
			storeFlag(),
			&cli.StringFlag{Name: "name", Required: true, Usage: "profile name ([a-z0-9][a-z0-9._-]*)"},
			&cli.StringFlag{Name: "kernel", Required: true, Usage: "kernel file"},
			&cli.StringFlag{Name: "initrd", Usage: "initrd file"},
			&cli.StringFlag{Name: "cmdline", Usage: "kernel command line"},
			&cli.StringSliceFlag{Name: "boot-file", Usage: "further file served with the profile (repeatable)"},
			outputFlag("table", "json", "yaml"),
		},
		Action: func(c *cli.Context) error { return imageAdd(e, c) },
	}
}

// imageAdd checks every file the flags name, then stores the profile and shows it.
func imageAdd(e *env, c *cli.Context) error {
	format := c.String("output")
	p, files, err := images.ProfileFromFiles(c.String("name"), c.String("cmdline"), c.String("kernel"), c.String("initrd"),
		c.StringSlice("boot-file"))
	if err != nil {
		return badInput("--%w", err)
	}
	// The store is created only once every file is known to exist, so that a failed add leaves
	// no empty store behind.
	st, err := images.Create(c.String("store"))
	if err != nil {
		return err
	}
	got, err := st.Add(p, files)
	if err != nil {
		if errors.Is(err, images.ErrInvalid) || errors.Is(err, fs.ErrNotExist) {
			return asBadInput(err)
		}
		return err
	}
	return writeResult(e.stdout, format, got.Summarize(), func(w io.Writer) error { return images.WriteProfileTable(w, []images.Profile{got}) })
}

func imageListCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:   "list",
		Usage:  "list the profiles of a store",
		Flags:  []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml", "csv")},
		Action: func(c *cli.Context) error { return imageList(e, c) },
	}
}

// imageList shows every profile of the store in the format asked for.
func imageList(e *env, c *cli.Context) error {
	format := c.String("output")
	st, err := openStore(c)
	if err != nil {
		return err
	}
	list := st.List()
	switch format {
	case "json", "yaml":
		out := make([]images.Summary, 0, len(list))
		for _, p := range list {
			out = append(out, p.Summarize())
		}
		return writeData(e.stdout, format, out)
	case "csv":
		return texttable.WriteCSV(e.stdout, images.ProfilesCSV(list))
	}
	return images.WriteProfileTable(e.stdout, list)
}

func imageVerifyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:   "verify",
		Usage:  "re-hash every stored file against the manifest; exits 1 when any is missing or changed",
		Flags:  []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml")},
		Action: func(c *cli.Context) error { return imageVerify(e, c) },
	}
}

// imageVerify re-hashes every stored file, shows what it found, and fails when anything is wrong.
func imageVerify(e *env, c *cli.Context) error {
	format := c.String("output")
	st, err := openStore(c)
	if err != nil {
		return err
	}
	r := st.VerifyAll()
	if err := writeResult(e.stdout, format, r, r.WriteText); err != nil {
		return err
	}
	if !r.OK {
		return fmt.Errorf("image store %s: %d of %d files missing, unreadable or changed", st.Dir(), len(r.Problems), r.Files)
	}
	return nil
}
