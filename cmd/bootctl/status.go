package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

// statusResult is what `bootctl status --output json` prints: the summary over every server asked,
// each server's own summary, and the nodes grouped by state (boot order, then name).
type statusResult struct {
	Summary bootsrv.Summary       `json:"summary"`
	Servers []serverStatus        `json:"servers"`
	Nodes   []bootsrv.NodeStatus  `json:"nodes"`
	ByState map[bootsrv.State]int `json:"by_state"`
}

type serverStatus struct {
	URL     string          `json:"url"`
	Summary bootsrv.Summary `json:"summary"`
}

func statusCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show the boot state of every node of one or more boot servers, and their aggregated health",
		Flags: []cli.Flag{
			&cli.StringSliceFlag{Name: "server", Aliases: []string{"s"}, EnvVars: []string{"BOOTCTL_SERVER"}, Required: true,
				Usage: "boot server HTTP URL, e.g. http://10.0.0.1:8080; repeat to aggregate several servers"},
			&cli.IntFlag{Name: "watch", Aliases: []string{"w"}, Usage: "refresh every N seconds until interrupted (0: once)"},
			&cli.StringFlag{Name: "state", Usage: "show only the nodes in this state"},
			&cli.DurationFlag{Name: "timeout", Value: 10 * time.Second, Usage: "timeout of each request"},
			outputFlag("table", "json", "yaml", "csv"),
		},
		Action: func(c *cli.Context) error {
			format, err := outputFormat(c, "table", "json", "yaml", "csv")
			if err != nil {
				return err
			}
			if c.Int("watch") < 0 {
				return badInput("--watch: %d is not a number of seconds", c.Int("watch"))
			}
			var only *bootsrv.State
			if c.IsSet("state") {
				st, err := bootsrv.ParseState(c.String("state"))
				if err != nil {
					return badInput("--state: %v", err)
				}
				only = &st
			}
			var servers []string
			for _, s := range c.StringSlice("server") {
				u, err := url.Parse(s)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return badInput("--server: %q is not an http:// URL", s)
				}
				servers = append(servers, strings.TrimSuffix(s, "/"))
			}
			hc := &http.Client{Timeout: c.Duration("timeout")}
			show := func() error {
				res, err := fetchStatus(c.Context, hc, servers, only)
				if err != nil {
					return err
				}
				switch format {
				case "json", "yaml":
					return writeData(e.stdout, format, res)
				case "csv":
					return writeStatusCSV(e.stdout, res)
				}
				return writeStatusTable(e.stdout, res)
			}
			watch := time.Duration(c.Int("watch")) * time.Second
			if watch == 0 {
				return show()
			}
			clear := format == "table" && isTerminal(e.stdout)
			for {
				if clear {
					fmt.Fprint(e.stdout, "\x1b[H\x1b[2J")
				}
				if err := show(); err != nil {
					if c.Context.Err() != nil {
						return c.Context.Err() // interrupted: bootctl exits 130
					}
					// A server restarting is what one watches for: keep going.
					e.log.Warn("status", zap.Error(err))
					fmt.Fprintf(e.stdout, "%s: %v\n", time.Now().Format(time.TimeOnly), err)
				}
				if format == "table" && !clear {
					fmt.Fprintln(e.stdout)
				}
				select {
				case <-c.Context.Done():
					return c.Context.Err() // interrupted: bootctl exits 130
				case <-time.After(watch):
				}
			}
		},
	}
}

// fetchStatus asks every server for its nodes and summary.
func fetchStatus(ctx context.Context, hc *http.Client, servers []string, only *bootsrv.State) (*statusResult, error) {
	res := &statusResult{ByState: map[bootsrv.State]int{}}
	var all []bootsrv.NodeStatus
	for _, s := range servers {
		cl := &bootsrv.Client{BaseURL: s, HTTP: hc}
		nodes, err := cl.Nodes(ctx)
		if err != nil {
			return nil, err
		}
		sum, err := cl.Summary(ctx)
		if err != nil {
			return nil, err
		}
		res.Servers = append(res.Servers, serverStatus{URL: s, Summary: *sum})
		all = append(all, nodes.Nodes...)
	}
	if len(res.Servers) == 1 {
		res.Summary = res.Servers[0].Summary
	} else {
		res.Summary = bootsrv.Summarize(all, "all", -1, time.Now())
	}
	for _, st := range bootsrv.States() {
		res.ByState[st] = 0
	}
	for _, n := range all {
		res.ByState[n.State]++
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].State != all[j].State {
			return all[i].State < all[j].State
		}
		return all[i].Name < all[j].Name
	})
	res.Nodes = all[:0:0]
	for _, n := range all {
		if only == nil || n.State == *only {
			res.Nodes = append(res.Nodes, n)
		}
	}
	return res, nil
}

// writeStatusCSV writes one row per node.
func writeStatusCSV(w io.Writer, res *statusResult) error {
	rows := [][]string{{"node", "state", "since", "attempt", "ip", "mac", "position", "error"}}
	for _, n := range res.Nodes {
		since := ""
		if !n.Since.IsZero() {
			since = n.Since.UTC().Format(time.RFC3339)
		}
		rows = append(rows, []string{n.Name, n.State.String(), since, strconv.Itoa(n.Attempt), n.IP, n.MAC, n.Position, n.Error})
	}
	return writeCSV(w, rows)
}

func writeStatusTable(w io.Writer, res *statusResult) error {
	s := res.Summary
	fmt.Fprintf(w, "%s: %d nodes, health %s (%d healthy, %d failed, %d booting, %d pending)", s.Server, s.Nodes,
		s.Health.Status, s.Health.Healthy, s.Health.Failed, s.Health.Booting, s.Health.Pending)
	if b := s.BootSeconds; b != nil {
		fmt.Fprintf(w, "; discover to healthy min %s s, median %s s, max %s s", fmtFloat(b.Min, 1), fmtFloat(b.Median, 1), fmtFloat(b.Max, 1))
	}
	fmt.Fprintln(w)
	var counts []string
	for _, st := range bootsrv.States() {
		if n := res.ByState[st]; n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", st, n))
		}
	}
	fmt.Fprintf(w, "by state: %s\n\n", strings.Join(counts, ", "))
	if len(res.Nodes) == 0 {
		return nil
	}
	t := newTable(w)
	t.row("node", "state", "since", "attempt", "ip", "mac", "position", "detail")
	now := time.Now()
	for _, n := range res.Nodes {
		since := "-"
		if !n.Since.IsZero() {
			since = now.Sub(n.Since).Round(time.Second).String() + " ago"
		}
		detail := n.Error
		if detail == "" && len(n.History) > 0 {
			detail = n.History[len(n.History)-1].Detail
		}
		if len(detail) > 60 {
			detail = detail[:57] + "..."
		}
		ip := n.IP
		if ip == "" {
			ip = "-"
		}
		if detail == "" {
			detail = "-"
		}
		t.row(n.Name, n.State, since, n.Attempt, ip, n.MAC, n.Position, detail)
	}
	return t.flush()
}
