package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
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

// imageSummary is one profile as `bootctl image list` shows it.
type imageSummary struct {
	Name      string                 `json:"name"`
	Kernel    string                 `json:"kernel"`
	Initrd    string                 `json:"initrd,omitempty"`
	Cmdline   string                 `json:"cmdline,omitempty"`
	BootFiles []string               `json:"boot_files,omitempty"`
	Bytes     int64                  `json:"bytes"`
	Files     map[string]images.Blob `json:"files"`
}

func summarizeProfile(p images.Profile) imageSummary {
	s := imageSummary{Name: p.Name, Kernel: p.Kernel, Initrd: p.Initrd, Cmdline: p.Cmdline, BootFiles: p.BootFiles, Files: p.Files}
	for _, b := range p.Files {
		s.Bytes += b.Size
	}
	return s
}

func imageCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "image",
		Usage: "manage boot profiles (kernel, initrd, command line, boot files) in an image store",
		Subcommands: []*cli.Command{
			{
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
				Action: func(c *cli.Context) error {
					format, err := outputFormat(c, "table", "json", "yaml")
					if err != nil {
						return err
					}
					files := map[string]string{}
					p := images.Profile{Name: c.String("name"), Cmdline: c.String("cmdline")}
					add := func(flag, path string) (string, error) {
						if fi, err := os.Stat(path); err != nil {
							return "", badInput("--%s: %v", flag, err)
						} else if !fi.Mode().IsRegular() {
							return "", badInput("--%s: %s is not a regular file", flag, path)
						}
						name := filepath.Base(path)
						if prev, dup := files[name]; dup && prev != path {
							return "", badInput("--%s %s: a file named %s is already given (%s); names must differ", flag, path, name, prev)
						}
						files[name] = path
						return name, nil
					}
					if p.Kernel, err = add("kernel", c.String("kernel")); err != nil {
						return err
					}
					if c.String("initrd") != "" {
						if p.Initrd, err = add("initrd", c.String("initrd")); err != nil {
							return err
						}
					}
					for _, f := range c.StringSlice("boot-file") {
						n, err := add("boot-file", f)
						if err != nil {
							return err
						}
						p.BootFiles = append(p.BootFiles, n)
					}
					// The store is created only once every file is known to exist, so that a
					// failed add leaves no empty store behind.
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
						return writeData(e.stdout, format, summarizeProfile(got))
					}
					return writeImageTable(e, []images.Profile{got})
				},
			},
			{
				Name:  "list",
				Usage: "list the profiles of a store",
				Flags: []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml", "csv")},
				Action: func(c *cli.Context) error {
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
						out := make([]imageSummary, 0, len(list))
						for _, p := range list {
							out = append(out, summarizeProfile(p))
						}
						return writeData(e.stdout, format, out)
					case "csv":
						rows := [][]string{{"profile", "kernel", "initrd", "files", "bytes", "kernel_sha256", "cmdline"}}
						for _, p := range list {
							s := summarizeProfile(p)
							rows = append(rows, []string{p.Name, p.Kernel, p.Initrd, strconv.Itoa(len(p.FileNames())),
								strconv.FormatInt(s.Bytes, 10), p.Files[p.Kernel].SHA256, p.Cmdline})
						}
						return writeCSV(e.stdout, rows)
					}
					return writeImageTable(e, list)
				},
			},
			{
				Name:  "verify",
				Usage: "re-hash every stored file against the manifest; exits 1 when any is missing or changed",
				Flags: []cli.Flag{storeFlag(), outputFlag("table", "json", "yaml")},
				Action: func(c *cli.Context) error {
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
					if format != "table" {
						type problem struct {
							Profile string `json:"profile"`
							File    string `json:"file"`
							SHA256  string `json:"sha256"`
							Kind    string `json:"kind"`
							Detail  string `json:"detail"`
						}
						out := struct {
							Files    int       `json:"files"`
							OK       bool      `json:"ok"`
							Problems []problem `json:"problems"`
						}{Files: files, OK: len(problems) == 0, Problems: []problem{}}
						for _, p := range problems {
							out.Problems = append(out.Problems, problem{p.Profile, p.File, p.Blob.SHA256, p.Kind, p.Detail})
						}
						if err := writeData(e.stdout, format, out); err != nil {
							return err
						}
					} else {
						for _, p := range problems {
							fmt.Fprintln(e.stdout, p.String())
						}
						fmt.Fprintf(e.stdout, "%d files checked, %d problems\n", files, len(problems))
					}
					if len(problems) > 0 {
						return fmt.Errorf("image store %s: %d of %d files missing, unreadable or changed", st.Dir(), len(problems), files)
					}
					return nil
				},
			},
		},
	}
}

func writeImageTable(e *env, list []images.Profile) error {
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no profiles")
		return nil
	}
	t := newTable(e.stdout)
	t.row("profile", "kernel", "initrd", "files", "MB", "sha256 (kernel)", "cmdline")
	for _, p := range list {
		s := summarizeProfile(p)
		initrd := p.Initrd
		if initrd == "" {
			initrd = "-"
		}
		names := p.FileNames()
		sort.Strings(names)
		cmd := p.Cmdline
		if cmd == "" {
			cmd = "-"
		}
		t.row(p.Name, p.Kernel, initrd, len(names), fmtFloat(float64(s.Bytes)/1e6, 1), p.Files[p.Kernel].SHA256[:12], cmd)
	}
	return t.flush()
}
