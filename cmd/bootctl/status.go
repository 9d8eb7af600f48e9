package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/fleet"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

func statusCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "status",
		Usage:     "show the boot state of every inventory node, with its owner server, and the aggregated health",
		ArgsUsage: "[NODES...]",
		Description: "Every node of the inventory is listed: a node no answering server holds a state for is\n" +
			"shown as unknown, with the server that owns it.\n" + nodesHelp,
		Flags: append([]cli.Flag{
			&cli.StringSliceFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"},
				Usage: "boot server HTTP URL, e.g. http://10.0.0.1:8080; repeat to aggregate several servers"},
			fleetEtcdFlag(), fleetNameFlag(),
			&cli.IntFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh every N seconds until interrupted (0: once)"},
			&cli.StringFlag{Name: "state", Usage: "show only the nodes in this state (or unknown: those no server holds a state for)"},
			groupFlag(),
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "timeout of each request"},
			outputFlag("table", "json", "yaml", "csv"),
		}, etcdSecurityFlags()...),
		Action: func(c *cli.Context) error {
			q, err := parseStatusQuery(c)
			if err != nil {
				return err
			}
			if q.watch == 0 {
				return q.show(c.Context, e.stdout)
			}
			return q.watchLoop(c.Context, e)
		},
	}
}

// statusQuery is what `bootctl status` was asked: where to read, which nodes, how to show them.
type statusQuery struct {
	format    string
	only      *nodestate.State // nil: every state
	unknown   bool             // --state unknown: only the nodes no server holds
	sel       nodeSelection
	endpoints []string // --etcd; else servers
	fleet     string
	etcd      fleet.Options // with --etcd: TLS and user (etcdSecurity)
	servers   []string
	hc        *http.Client
	watch     time.Duration // 0: once
}

// parseStatusQuery checks the flags of `bootctl status`.
func parseStatusQuery(c *cli.Context) (*statusQuery, error) {
	if err := refuseWithoutEtcd(c); err != nil {
		return nil, err
	}
	if c.Int("watch") < 0 {
		return nil, badInput("--watch: %d is not a number of seconds", c.Int("watch"))
	}
	q := &statusQuery{format: c.String("output"), fleet: c.String("fleet"), endpoints: etcdEndpoints(c),
		hc: &http.Client{Timeout: c.Duration("timeout")}, watch: time.Duration(c.Int("watch")) * time.Second}
	var err error
	if q.sel, err = parseSelection(c); err != nil {
		return nil, err
	}
	if c.String("state") == "unknown" {
		q.unknown = true
	} else if c.IsSet("state") {
		st, err := nodestate.ParseState(c.String("state"))
		if err != nil {
			names := []string{}
			for _, s := range nodestate.States() {
				names = append(names, s.String())
			}
			return nil, badInput("--state: %v (states: %s, unknown)", err, strings.Join(names, ", "))
		}
		q.only = &st
	}
	return q, q.where(c)
}

// where fills in where q reads the nodes: --server URLs or the fleet's etcd.
func (q *statusQuery) where(c *cli.Context) error {
	servers := c.StringSlice("server")
	switch {
	case len(q.endpoints) == 0 && len(servers) == 0:
		return badInput("give --server URL (repeatable) or --etcd ENDPOINTS: where the nodes are served")
	case len(q.endpoints) > 0 && len(servers) > 0:
		return badInput("--server and --etcd exclude each other")
	case len(q.endpoints) > 0:
		var err error
		if q.etcd, err = etcdSecurity(c); err != nil {
			return err
		}
		q.etcd.Endpoints, q.etcd.Fleet = q.endpoints, q.fleet
	}
	for _, s := range servers {
		if err := checkServerURL(s); err != nil {
			return err
		}
		q.servers = append(q.servers, strings.TrimSuffix(s, "/"))
	}
	return nil
}

// show reads the status once and writes it in the asked format. Servers that did not answer make
// it an unreachableError after the others' nodes are written.
func (q *statusQuery) show(ctx context.Context, w io.Writer) error {
	var rd *bootapi.StatusRead
	var err error
	if len(q.endpoints) > 0 {
		rd, err = bootsrv.ReadFleetNodes(ctx, q.etcd)
	} else {
		rd, err = bootapi.ReadServers(ctx, q.hc, q.servers)
	}
	if err != nil {
		return err
	}
	res, err := q.complete(rd)
	if err != nil {
		return err
	}
	switch q.format {
	case "json", "yaml":
		err = writeData(w, q.format, res)
	case "csv":
		err = res.WriteCSV(w)
	default:
		err = res.WriteTable(w, time.Now())
	}
	if err != nil {
		return err
	}
	if len(res.Unreachable) > 0 {
		// The others' nodes are out; the exit status says the picture is partial.
		return &bootapi.UnreachableError{Failed: res.Unreachable}
	}
	return nil
}

// watchLoop shows the status every q.watch until ctx ends (bootctl then exits 130); a table on a
// terminal is redrawn in place.
func (q *statusQuery) watchLoop(ctx context.Context, e *env) error {
	clear := q.format == "table" && isTerminal(e.stdout)
	for {
		if clear {
			fmt.Fprint(e.stdout, "\x1b[H\x1b[2J")
		}
		if err := q.show(ctx, e.stdout); err != nil {
			if ctx.Err() != nil {
				return ctx.Err() // interrupted: bootctl exits 130
			}
			// A server restarting is what one watches for: keep going.
			e.log.Warn("status", zap.Error(err))
			fmt.Fprintf(e.stdout, "%s: %v\n", time.Now().Format(time.TimeOnly), err)
		}
		if q.format == "table" && !clear {
			fmt.Fprintln(e.stdout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err() // interrupted: bootctl exits 130
		case <-time.After(q.watch):
		}
	}
}
