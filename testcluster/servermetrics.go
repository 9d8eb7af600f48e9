package testcluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ServerCounter returns the sum of a Prometheus counter (or gauge) over every label set and every
// boot server of the cluster, read from each server's /metrics from inside its namespace: for
// instance bootfabric_tftp_transfers_total, to show that a boot made no TFTP transfer at all.
func ServerCounter(ctx context.Context, c *Cluster, name string) (float64, error) {
	total := 0.0
	for _, s := range c.Servers {
		tr := &http.Transport{DialContext: nsDialer(s.Namespace)}
		cl := &http.Client{Timeout: 5 * time.Second, Transport: tr}
		v, err := fetchCounter(ctx, cl, "http://"+s.IP+"/metrics", name)
		tr.CloseIdleConnections()
		if err != nil {
			return 0, fmt.Errorf("boot server %s: %w", s.Name, err)
		}
		total += v
	}
	return total, nil
}

func fetchCounter(ctx context.Context, cl *http.Client, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return sumMetric(io.LimitReader(resp.Body, 64<<20), name)
}

// sumMetric adds up the samples of metric name in Prometheus's text exposition format: lines
// "name value" and "name{labels} value" (a timestamp may follow); comments and other metrics,
// including name_suffix ones, are skipped.
func sumMetric(r io.Reader, name string) (float64, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	total := 0.0
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		rest, ok := strings.CutPrefix(text, name)
		if !ok || strings.HasPrefix(text, "#") || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if rest[0] == '{' {
			// Label values may hold '}' only escaped inside quotes; the sample ends the line.
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				return 0, fmt.Errorf("metrics line %d: unterminated labels in %q", line, text)
			}
			rest = rest[end+1:]
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return 0, fmt.Errorf("metrics line %d: no value in %q", line, text)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics line %d: value %q: %w", line, fields[0], err)
		}
		total += v
	}
	return total, sc.Err()
}
