package main

import (
	"context"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/delivery"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// fetchCommand is the node side of peer delivery. It is a top-level verb, not under `node` (the
// operator's commands about nodes): it runs on the node itself, from its agent initramfs.
func fetchCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "fetch",
		Usage:     "fetch an image file on a node: from its peers and the boot server (BitTorrent), every byte checked",
		UsageText: "bootctl fetch --server URL --file NAME --node NAME --token TOKEN --out PATH [--seed-for 2m]",
		Description: "The boot server is the tracker and the web seed of last resort; peers come from it only, closest\n" +
			"in the fabric first. Every piece is checked against the metainfo and the whole file against its\n" +
			"sha256 before it is written to --out. The node then serves the file to its peers for --seed-for.",
		Flags: []cli.Flag{
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
			outputFlag("text", "json"),
		},
		Action: func(c *cli.Context) error {
			format := c.String("output")
			o, err := fetchOptions(c)
			if err != nil {
				return err
			}
			return runFetch(c.Context, e, o, c.Duration("timeout"), format)
		},
	}
}

// fetchOptions checks the flags.
func fetchOptions(c *cli.Context) (delivery.Options, error) {
	o := delivery.Options{Server: strings.TrimRight(c.String("server"), "/"), Profile: c.String("profile"), File: c.String("file"),
		Node: c.String("node"), Token: c.String("token"), Out: c.String("out"), Bind: c.String("bind"), Port: c.Int("port"),
		SeedFor: c.Duration("seed-for"), ServerOnly: c.Bool("server-only"), CorruptUploads: c.Bool("debug-corrupt-uploads")}
	if err := checkFetchPeer(c, o); err != nil {
		return o, err
	}
	if r := c.String("upload-rate"); r != "0" {
		rate, err := units.ParseSize(r)
		if err != nil || rate <= 0 {
			return o, badInput("--upload-rate: %q is no size per second (e.g. 50MB; 0: no cap)", r)
		}
		o.UploadRate = rate
	}
	if c.Duration("seed-for") < 0 || c.Duration("timeout") <= 0 {
		return o, badInput("--seed-for and --timeout: durations must be positive (--seed-for %s, --timeout %s)", c.Duration("seed-for"), c.Duration("timeout"))
	}
	if st, err := os.Stat(filepath.Dir(o.Out)); err != nil || !st.IsDir() {
		return o, badInput("--out: %q is not in an existing directory", o.Out)
	}
	return o, nil
}

// checkFetchPeer checks the flags that say where the node fetches from and serves on.
func checkFetchPeer(c *cli.Context, o delivery.Options) error {
	if u, err := url.Parse(o.Server); err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return badInput("--server: %q is no http:// or https:// URL", c.String("server"))
	}
	if o.Node == "" && !o.ServerOnly {
		return badInput("--node: required unless --server-only (the tracker answers inventory nodes only)")
	}
	if o.Bind != "" && net.ParseIP(o.Bind) == nil {
		return badInput("--bind: %q is no IP address", o.Bind)
	}
	if o.Port < 0 || o.Port > 65535 {
		return badInput("--port: %d is no port 0-65535", o.Port)
	}
	return nil
}

// runFetch fetches within timeout (the seed after it does not count) and prints the result.
func runFetch(ctx context.Context, e *env, o delivery.Options, timeout time.Duration, format string) error {
	res, err := delivery.FetchWithin(ctx, o, timeout)
	if err != nil {
		return err
	}
	if format == "json" {
		return writeJSON(e.stdout, res)
	}
	return res.WriteText(e.stdout, o.Out)
}
