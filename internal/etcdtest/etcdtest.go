// Package etcdtest starts a real etcd (Debian's etcd-server, /usr/bin/etcd) for tests: one member or
// a three-member cluster on free loopback ports, data in the test's temporary directory. Members can
// be killed, stopped and restarted to test what a fleet does when etcd fails. Everything started is
// killed when the test ends, pass or fail, and nothing else is ever signalled: each member runs in a
// process group of its own, and only those groups are killed.
//
// With Options.TLS the members serve clients over https only and require a client certificate
// signed by the cluster's own CA (--client-cert-auth): Cluster.CAFile and Cluster.ClientCert give a
// client what it needs, and the certificate's common name is the etcd user once authentication is
// enabled. Peers stay plain http on loopback.
//
// etcd 3.4 has no --unsafe-no-fsync; the speedups used are the ones it has: a low snapshot count and
// fast first elections.
package etcdtest

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bootfabric/bootfabric/internal/testenv"
)

// Options configure Start.
type Options struct {
	// Members is the cluster size: 1 (default) or 3.
	Members int
	// HealthTimeout bounds the wait for the cluster to become healthy (default 20 s).
	HealthTimeout time.Duration
	// ClientHost is the address the members serve clients on (default 127.0.0.1): another
	// address of this host, e.g. one that network namespaces reach. Peers stay on loopback.
	ClientHost string
	// TLS serves clients over https with client certificates required (--client-cert-auth),
	// from a CA made for the cluster: see Cluster.CAFile and Cluster.ClientCert. Endpoints stay
	// host:port, which an etcd client given a TLS configuration dials with TLS.
	TLS bool
}

// Cluster is a running etcd cluster.
type Cluster struct {
	// Endpoints are the members' client addresses (ClientHost:PORT), in member order.
	Endpoints []string
	// Members are the per-member handles.
	Members []*Member
	// CAFile is the PEM file of the CA that signed the members' and the client certificates
	// (Options.TLS; empty otherwise).
	CAFile string

	tb      testing.TB
	timeout time.Duration
	host    string       // ClientHost
	ca      *testCA      // Options.TLS; nil otherwise
	tlsArgs []string     // etcd's flags for TLS on the client URLs
	hc      *http.Client // for /health: with a client certificate under TLS
}

// Start starts an etcd cluster and waits until every member reports healthy. A missing etcd
// binary skips the test (fails it in CI, see testenv). The cluster is killed in tb.Cleanup.
func Start(tb testing.TB, opts Options) *Cluster {
	tb.Helper()
	bin := testenv.NeedTool(tb, "etcd", "etcd-server")
	if opts.Members == 0 {
		opts.Members = 1
	}
	if opts.Members != 1 && opts.Members != 3 {
		tb.Fatalf("etcdtest: %d members, want 1 or 3", opts.Members)
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = 20 * time.Second
	}
	if opts.ClientHost == "" {
		opts.ClientHost = "127.0.0.1"
	}
	// TempDir first: cleanups run last-registered first, so the members are killed before
	// their data directories are removed.
	dir := tb.TempDir()
	c := &Cluster{tb: tb, timeout: opts.HealthTimeout, host: opts.ClientHost, hc: &http.Client{Timeout: time.Second}}
	tb.Cleanup(c.cleanup)
	if opts.TLS {
		if err := c.setupTLS(filepath.Join(dir, "tls")); err != nil {
			tb.Fatalf("etcdtest: TLS: %v", err)
		}
	}

	// A port found free may be taken before etcd binds it; a member that dies at once is
	// retried on new ports, a few times.
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.start(bin, dir, attempt, opts.Members); err == nil {
			return c
		}
		tb.Logf("etcdtest: attempt %d: %v", attempt+1, err)
		c.killAll()
	}
	tb.Fatalf("etcdtest: cannot start etcd: %v", err)
	return nil
}

func (c *Cluster) start(bin, dir string, attempt, n int) error {
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	c.Members, c.Endpoints = nil, nil
	var initial []string
	for i := 0; i < n; i++ {
		m := &Member{
			Name:     fmt.Sprintf("m%d", i),
			Endpoint: net.JoinHostPort(c.host, strconv.Itoa(ports[2*i])),
			PeerURL:  fmt.Sprintf("http://127.0.0.1:%d", ports[2*i+1]),
			bin:      bin,
			dir:      filepath.Join(dir, fmt.Sprintf("try%d-m%d", attempt, i)),
			cluster:  c,
		}
		c.Members = append(c.Members, m)
		c.Endpoints = append(c.Endpoints, m.Endpoint)
		initial = append(initial, m.Name+"="+m.PeerURL)
	}
	token := fmt.Sprintf("etcdtest-%d-%d", os.Getpid(), ports[0])
	for _, m := range c.Members {
		m.args = []string{
			"--name", m.Name,
			"--data-dir", filepath.Join(m.dir, "data"),
			"--listen-client-urls", c.scheme() + "://" + m.Endpoint,
			"--advertise-client-urls", c.scheme() + "://" + m.Endpoint,
			"--listen-peer-urls", m.PeerURL,
			"--initial-advertise-peer-urls", m.PeerURL,
			"--initial-cluster", strings.Join(initial, ","),
			"--initial-cluster-token", token,
			"--initial-cluster-state", "new",
			"--snapshot-count", "10000",
			"--logger", "zap",
			"--log-outputs", "stderr",
		}
		m.args = append(m.args, c.tlsArgs...)
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return err
		}
		if err := m.spawn(); err != nil {
			return err
		}
	}
	return c.waitHealthy(c.Members...)
}

// Member returns member i.
func (c *Cluster) Member(i int) *Member { return c.Members[i] }

// WaitHealthy waits (bounded by Options.HealthTimeout) until every running member is healthy.
func (c *Cluster) WaitHealthy() {
	c.tb.Helper()
	var up []*Member
	for _, m := range c.Members {
		if m.Running() {
			up = append(up, m)
		}
	}
	if err := c.waitHealthy(up...); err != nil {
		c.tb.Fatalf("etcdtest: %v", err)
	}
}

// RestartAll starts every member that is not running again, all at once (a cluster that lost its
// quorum has no healthy member until a majority is back, so members restarted one by one with
// Member.Restart would wait in vain), and waits until every member is healthy.
func (c *Cluster) RestartAll() {
	c.tb.Helper()
	for _, m := range c.Members {
		if m.Running() {
			continue
		}
		m.kill() // forgets the exited process
		if err := m.spawn(); err != nil {
			c.tb.Fatalf("etcdtest: %v", err)
		}
	}
	if err := c.waitHealthy(c.Members...); err != nil {
		c.tb.Fatalf("etcdtest: restart: %v", err)
	}
}

// waitHealthy polls each member's /health until it says true, a member exits or the timeout.
func (c *Cluster) waitHealthy(ms ...*Member) error {
	deadline := time.Now().Add(c.timeout)
	for _, m := range ms {
		for {
			ok, err := m.healthy()
			if ok {
				break
			}
			if !m.Running() {
				return fmt.Errorf("member %s exited: %s", m.Name, m.logTail(20))
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("member %s not healthy after %v (last: %v): %s", m.Name, c.timeout, err, m.logTail(20))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// setupTLS makes the cluster's CA in dir, the members' server certificate (for 127.0.0.1 and
// ClientHost; also a client certificate, as etcd 3.4's gRPC gateway dials its own member with it)
// and the health checker's client certificate.
func (c *Cluster) setupTLS(dir string) error {
	ca, err := newTestCA(dir)
	if err != nil {
		return err
	}
	both := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	certFile, keyFile, err := ca.issueFiles("server", "etcdtest member", both, "127.0.0.1", "localhost", c.host)
	if err != nil {
		return err
	}
	health, _, _, err := ca.issue("etcdtest health", []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		return err
	}
	c.ca, c.CAFile = ca, ca.file()
	c.tlsArgs = []string{"--client-cert-auth", "--trusted-ca-file", ca.file(), "--cert-file", certFile, "--key-file", keyFile}
	c.hc.Transport = &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.pool(), Certificates: []tls.Certificate{health}, MinVersion: tls.VersionTLS12,
	}}
	return nil
}

// scheme is the members' client URL scheme.
func (c *Cluster) scheme() string {
	if c.ca != nil {
		return "https"
	}
	return "http"
}

// cleanup kills every member and, when the test failed, logs the end of each member's log.
func (c *Cluster) cleanup() {
	c.killAll()
	c.hc.CloseIdleConnections()
	if c.tb.Failed() {
		for _, m := range c.Members {
			c.tb.Logf("etcdtest: member %s log (end):\n%s", m.Name, m.logTail(30))
		}
	}
}

func (c *Cluster) killAll() {
	for _, m := range c.Members {
		m.kill()
	}
}

// freePorts returns n distinct loopback TCP ports that were free a moment ago.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("free port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// logTail returns the last n lines of the member's log.
func (m *Member) logTail(n int) string {
	b, err := os.ReadFile(m.logPath())
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}
