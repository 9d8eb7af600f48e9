// Package fetchcli is the command line of a fetch through the fabric: its flags, their checks and
// its output. `bootctl fetch` and bootfetch, the small binary a node's first-stage initramfs
// carries, are both this one command, so that the two never drift apart.
package fetchcli

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/delivery"
	"github.com/bootfabric/bootfabric/internal/cligrammar"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// Command is the fetch command, writing its result to stdout. Bad flags come back as a
// *cligrammar.UsageError naming the flag (exit status 2 in both binaries); a failed fetch as any
// other error.
func Command(stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "fetch an image file on a node: from its peers and the boot server (BitTorrent), every byte checked",
		UsageText: "fetch --server URL --file NAME --node NAME --token TOKEN --out PATH [--seed-for 2m]",
		Description: "The boot server is the tracker and the web seed of last resort; peers come from it only, closest\n" +
			"in the fabric first. Every piece is checked against the metainfo and the whole file against its\n" +
			"sha256 before it is written to --out. The node then serves the file to its peers for --seed-for.",
		Flags: Flags(),
		Action: func(c *cli.Context) error {
			o, timeout, format, err := Options(c)
			if err != nil {
				return &cligrammar.UsageError{Cmd: c.Command.HelpName, Err: err}
			}
			return run(c, stdout, o, timeout, format)
		},
	}
}

// Flags are the fetch command's flags.
func Flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "server", Required: true, Usage: "the boot server's base URL, http://ADDRESS[:PORT]"},
		&cli.StringFlag{Name: "profile", Value: "default", Usage: "the profile in the server's image store"},
		&cli.StringFlag{Name: "file", Required: true, Usage: "the profile's file, e.g. initrd.img"},
		&cli.StringFlag{Name: "node", Usage: "this node's inventory name (the tracker answers inventory nodes only)"},
		&cli.StringFlag{Name: "token", Usage: "this node's boot token, from its iPXE script"},
		&cli.StringFlag{Name: "out", Required: true, Usage: "where the verified file goes"},
		&cli.StringFlag{Name: "bind", Usage: "local address to fetch and serve from (default: any)"},
		&cli.IntFlag{Name: "port", Usage: "peer port (0: any free port)"},
		&cli.DurationFlag{Name: "seed-for", Usage: "how long to serve the file to peers once it is complete"},
		&cli.StringFlag{Name: "upload-rate", Value: "0", Usage: "cap on what this node sends its peers, per second (e.g. 50MB; 0: no cap)"},
		&cli.DurationFlag{Name: "timeout", Value: 10 * time.Minute, Usage: "give up the download after this long"},
		&cli.BoolFlag{Name: "server-only", Usage: "fetch from the boot server alone (no tracker, no peers): the baseline"},
		&cli.BoolFlag{Name: "debug-corrupt-uploads", Hidden: true, Usage: "serve inverted bytes to peers: only to test their defences"},
		cligrammar.WithChoices(cli.StringFlag{Name: "output", Aliases: []string{"o"}, Value: "text", Usage: "result format: text, json"}, "text", "json"),
	}
}

// Options checks the flags: the fetch's options, its download timeout and the output format.
func Options(c *cli.Context) (delivery.Options, time.Duration, string, error) {
	o := delivery.Options{Server: strings.TrimRight(c.String("server"), "/"), Profile: c.String("profile"), File: c.String("file"),
		Node: c.String("node"), Token: c.String("token"), Out: c.String("out"), Bind: c.String("bind"), Port: c.Int("port"),
		SeedFor: c.Duration("seed-for"), ServerOnly: c.Bool("server-only"), CorruptUploads: c.Bool("debug-corrupt-uploads")}
	format := c.String("output")
	if format != "text" && format != "json" {
		return o, 0, "", fmt.Errorf("--output: %q is not one of text, json", format)
	}
	if err := checkPeer(c, o); err != nil {
		return o, 0, "", err
	}
	if r := c.String("upload-rate"); r != "0" {
		rate, err := units.ParseSize(r)
		if err != nil || rate <= 0 {
			return o, 0, "", fmt.Errorf("--upload-rate: %q is no size per second (e.g. 50MB; 0: no cap)", r)
		}
		o.UploadRate = rate
	}
	if c.Duration("seed-for") < 0 || c.Duration("timeout") <= 0 {
		return o, 0, "", fmt.Errorf("--seed-for and --timeout: durations must be positive (--seed-for %s, --timeout %s)", c.Duration("seed-for"), c.Duration("timeout"))
	}
	if st, err := os.Stat(filepath.Dir(o.Out)); err != nil || !st.IsDir() {
		return o, 0, "", fmt.Errorf("--out: %q is not in an existing directory", o.Out)
	}
	return o, c.Duration("timeout"), format, nil
}

// checkPeer checks the flags that say where the node fetches from and serves on.
func checkPeer(c *cli.Context, o delivery.Options) error {
	if u, err := url.Parse(o.Server); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("--server: %q is no http:// or https:// URL", c.String("server"))
	}
	if o.Node == "" && !o.ServerOnly {
		return fmt.Errorf("--node: required unless --server-only (the tracker answers inventory nodes only)")
	}
	if o.Bind != "" && net.ParseIP(o.Bind) == nil {
		return fmt.Errorf("--bind: %q is no IP address", o.Bind)
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port: %d is no port 0-65535", o.Port)
	}
	return nil
}

// run fetches within timeout (the seed after it does not count) and prints the result. As text,
// the download's line comes as soon as the file is verified, before the seed: a node's agent
// waits for it to boot the file.
func run(c *cli.Context, stdout io.Writer, o delivery.Options, timeout time.Duration, format string) error {
	if format == "text" {
		o.Verified = func(res delivery.Result) { _ = res.WriteVerified(stdout, o.Out) }
	}
	res, err := delivery.FetchWithin(c.Context, o, timeout)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	return res.WriteSeed(stdout)
}
