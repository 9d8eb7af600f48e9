package main

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/bootfabric/bootfabric/images"
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
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
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
	if format != "table" {
		return writeData(e.stdout, format, got.Summarize())
	}
	return writeImageTable(e, []images.Profile{got})
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
	format, err := outputFormat(c, "table", "json", "yaml", "csv")
	if err != nil {
		return err
	}
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
		return writeCSV(e.stdout, imageCSV(list))
	}
	return writeImageTable(e, list)
}

// imageCSV is the profiles as CSV records, the header first.
func imageCSV(list []images.Profile) [][]string {
	rows := [][]string{{"profile", "kernel", "initrd", "files", "bytes", "kernel_sha256", "cmdline", "kernel_bytes", "initrd_bytes"}}
	for _, p := range list {
		s := p.Summarize()
		rows = append(rows, []string{p.Name, p.Kernel, p.Initrd, strconv.Itoa(len(p.FileNames())),
			strconv.FormatInt(s.Bytes, 10), p.Files[p.Kernel].SHA256, p.Cmdline,
			strconv.FormatInt(s.KernelBytes, 10), strconv.FormatInt(s.InitrdBytes, 10)})
	}
	return rows
}

func imageVerifyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:   "verify",
		Usage:  "re-hash every stored file against the manifest; exits 1 when any is missing or changed",
		Flags:  []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml")},
		Action: func(c *cli.Context) error { return imageVerify(e, c) },
	}
}

// verifyProblem is one file image verify found missing, unreadable or changed.
type verifyProblem struct {
	Profile string `json:"profile"`
	File    string `json:"file"`
	SHA256  string `json:"sha256"`
	Kind    string `json:"kind"`
	Detail  string `json:"detail"`
}

// verifyResult is what image verify reports as data.
type verifyResult struct {
	Files    int             `json:"files"`
	OK       bool            `json:"ok"`
	Problems []verifyProblem `json:"problems"`
}

// imageVerify re-hashes every stored file, shows what it found, and fails when anything is wrong.
func imageVerify(e *env, c *cli.Context) error {
	format, err := outputFormat(c, "table", "json", "yaml")
	if err != nil {
		return err
	}
	st, err := openStore(c)
	if err != nil {
		return err
	}
	problems := st.Verify()
	files := 0
	for _, p := range st.List() {
		files += len(p.FileNames())
	}
	if err := writeVerify(e, format, files, problems); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("image store %s: %d of %d files missing, unreadable or changed", st.Dir(), len(problems), files)
	}
	return nil
}

// writeVerify shows image verify's findings: one line per problem and a count, or as data.
func writeVerify(e *env, format string, files int, problems []images.Problem) error {
	if format == "table" {
		for _, p := range problems {
			fmt.Fprintln(e.stdout, p.String())
		}
		fmt.Fprintf(e.stdout, "%d files checked, %d problems\n", files, len(problems))
		return nil
	}
	out := verifyResult{Files: files, OK: len(problems) == 0, Problems: []verifyProblem{}}
	for _, p := range problems {
		out.Problems = append(out.Problems, verifyProblem{p.Profile, p.File, p.Blob.SHA256, p.Kind, p.Detail})
	}
	return writeData(e.stdout, format, out)
}

func writeImageTable(e *env, list []images.Profile) error {
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no profiles")
		return nil
	}
	t := newTable(e.stdout)
	t.row("profile", "kernel", "kernel MB", "initrd", "initrd MB", "files", "MB", "sha256 (kernel)", "cmdline")
	for _, p := range list {
		s := p.Summarize()
		initrdMB := "-"
		if p.Initrd != "" {
			initrdMB = fmtFloat(float64(s.InitrdBytes)/1e6, 1)
		}
		t.row(p.Name, p.Kernel, fmtFloat(float64(s.KernelBytes)/1e6, 1), orDash(p.Initrd), initrdMB, len(p.FileNames()),
			fmtFloat(float64(s.Bytes)/1e6, 1), p.Files[p.Kernel].SHA256[:12], orDash(p.Cmdline))
	}
	return t.flush()
}
