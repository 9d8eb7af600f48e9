package testcluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/bootsrv"
	"github.com/bootfabric/bootfabric/nodestate"
)

// announceReboots tells the boot servers that the given nodes are about to be power-cycled, as an
// operator does with `bootctl node reboot NAME`: a boot server takes a DISCOVER from a node it saw
// booted or healthy for an event, not a new boot, unless the reboot was asked for. Only nodes some
// server holds as booted or healthy are announced. The requests go to each server's loopback from
// inside its namespace (the operator API accepts only its own host by default), with the operator
// token the server wrote into its state directory.
func (c *Cluster) announceReboots(ctx context.Context, nodes []int) error {
	want := map[string]bool{}
	for _, i := range nodes {
		want[c.Nodes[i].Name] = true
	}
	// A fleet may hand a node to another server between the list and the reboot (404 there):
	// ask again for the nodes not yet found, a few times.
	for try := 1; ; try++ {
		listed := map[string]bool{}
		for _, s := range c.Servers {
			if err := c.announceToServer(ctx, s, want, listed); err != nil {
				return err
			}
		}
		for name := range listed {
			delete(want, name)
		}
		if len(want) == 0 {
			return nil
		}
		if try == 5 {
			// A node no server lists could not be armed: it would boot as a node nobody
			// expects, and fail later with a cause far from this one.
			return fmt.Errorf("announcing reboots: no boot server lists nodes %v", slices.Sorted(maps.Keys(want)))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// announceToServer is announceTo for server s, from inside its namespace with its operator token.
func (c *Cluster) announceToServer(ctx context.Context, s Endpoint, want, listed map[string]bool) error {
	tok, err := bootsrv.ReadOperatorToken(filepath.Join(c.serverStateDir(s.Name), bootconfig.OperatorTokenFile))
	if err != nil {
		return fmt.Errorf("server %s: %w", s.Name, err)
	}
	tr := &http.Transport{DialContext: nsDialer(s.Namespace)}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	return announceTo(ctx, hc, c.serverAddr("127.0.0.1"), s.Name, tok, want, listed)
}

// announceTo arms the reboot of the nodes in want that server holds as booted or healthy, and
// marks in listed every node of want it holds (not one it handed off before the reboot reached it).
func announceTo(ctx context.Context, hc *http.Client, addr, server, tok string, want, listed map[string]bool) error {
	cl := &bootapi.Client{BaseURL: "http://" + addr, HTTP: hc}
	res, err := cl.Nodes(ctx)
	if err != nil {
		return fmt.Errorf("server %s: %w", server, err)
	}
	for _, n := range res.Nodes {
		if !want[n.Name] {
			continue
		}
		if n.State == nodestate.Booted || n.State == nodestate.Healthy {
			var se *bootapi.StatusError
			if _, err := cl.Reboot(ctx, n.Name, tok); errors.As(err, &se) && se.Code == http.StatusNotFound {
				continue // handed off since the list
			} else if err != nil {
				return fmt.Errorf("server %s: %w", server, err)
			}
		}
		listed[n.Name] = true
	}
	return nil
}

// serverAddr is host:port of a boot server's HTTP API at ip (c.HTTPPort, else 80).
func (c *Cluster) serverAddr(ip string) string {
	port := c.HTTPPort
	if port == 0 {
		port = 80
	}
	return net.JoinHostPort(ip, strconv.Itoa(port))
}

// serverStateDir is server name's state directory: c.StateDirs's, else StartServers' DIR/state-NAME.
func (c *Cluster) serverStateDir(name string) string {
	if d, ok := c.StateDirs[name]; ok {
		return d
	}
	return filepath.Join(c.dir(), "state-"+name)
}
