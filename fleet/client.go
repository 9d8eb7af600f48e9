package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
)

// Options configure Open.
type Options struct {
	// Endpoints are the etcd client URLs or host:port pairs of the cluster, all of them: the
	// client fails over between them when a member is down.
	Endpoints []string
	// Fleet names the fleet; its keys live under /bootfabric/<Fleet>/.
	Fleet string
	// DialTimeout bounds Open's first contact with etcd (default 3 s).
	DialTimeout time.Duration
	// RequestTimeout bounds every single request to etcd (default 3 s) so that no caller waits
	// on a partitioned cluster for longer than that, whatever its context.
	RequestTimeout time.Duration
	// Log receives the client's and etcd client's messages (default: none).
	Log *zap.Logger
	// Now is the clock for lease expiries and fencing (default time.Now). It must carry a
	// monotonic reading (as time.Now's does) for fencing to ignore wall-clock jumps.
	Now func() time.Time
	// Registerer receives the client's Prometheus collectors (nil: not registered). Clients
	// sharing a registry share the collectors.
	Registerer prometheus.Registerer

	// TLS, when not nil, makes the client talk TLS to every endpoint (give them as host:port or
	// https://host:port): the CA that signed the members' certificates and, for an etcd with
	// --client-cert-auth, this client's certificate, whose common name is its etcd user once
	// authentication is enabled. LoadTLS builds it from files. nil: plain connections.
	TLS *tls.Config
	// Username and Password authenticate as an etcd user (both or neither; ReadSecretFile reads
	// a password file). They take precedence over a certificate's common name. Over a plain
	// connection the password crosses the network in clear: use them with TLS.
	Username, Password string
}

// Client is one process's connection to a fleet's keys in etcd. It is safe for concurrent use.
type Client struct {
	cli     *clientv3.Client
	keys    keys
	fleet   string
	opts    Options
	log     *zap.Logger
	metrics *metrics
}

// Open connects to etcd and checks that at least one endpoint answers within DialTimeout. The
// endpoints that do not answer are logged; the client uses them again once they return.
func Open(ctx context.Context, opts Options) (*Client, error) {
	if err := ValidFleetName(opts.Fleet); err != nil {
		return nil, err
	}
	if len(opts.Endpoints) == 0 {
		return nil, errors.New("fleet: no etcd endpoints (give --etcd host:port,...)")
	}
	if err := checkSecurity(opts); err != nil {
		return nil, err
	}
	if opts.DialTimeout <= 0 {
		opts.DialTimeout = 3 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 3 * time.Second
	}
	if opts.Log == nil {
		opts.Log = zap.NewNop()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, fmt.Errorf("fleet metrics: %w", err)
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   opts.Endpoints,
		DialTimeout: opts.DialTimeout,
		// Keep-alive pings find a dead connection while no request is in flight, so that
		// the balancer moves to another member before the next request needs it.
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		// gRPC's default reconnect backoff grows to 2 minutes: after an etcd outage of 10 s a
		// member would wait seconds more before it tries again, longer than a lease's TTL, so
		// its lease would expire once etcd is back and its nodes be taken over. Retry every
		// second at most.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		})},
		Logger:   opts.Log.Named("etcd-client").WithOptions(zap.IncreaseLevel(zap.WarnLevel)),
		Context:  context.WithoutCancel(ctx),
		TLS:      opts.TLS,
		Username: opts.Username,
		Password: opts.Password,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd at %s: %w", strings.Join(opts.Endpoints, ","), err)
	}
	c := &Client{cli: cli, keys: newKeys(opts.Fleet), fleet: opts.Fleet, opts: opts, log: opts.Log, metrics: m}
	if err := c.probe(ctx); err != nil {
		cli.Close()
		return nil, err
	}
	return c, nil
}

// checkSecurity refuses options the etcd client would follow silently in a way not meant: a user
// without a password (the client would not authenticate at all), and an http:// endpoint with TLS
// (the client would dial it in clear).
func checkSecurity(opts Options) error {
	if (opts.Username == "") != (opts.Password == "") {
		return errors.New("fleet: etcd user and password go together: give both or neither")
	}
	if opts.TLS == nil {
		return nil
	}
	for _, ep := range opts.Endpoints {
		if strings.HasPrefix(ep, "http://") {
			return fmt.Errorf("fleet: etcd endpoint %s is plain http, but TLS is configured: give https://%s or %s",
				ep, strings.TrimPrefix(ep, "http://"), strings.TrimPrefix(ep, "http://"))
		}
	}
	return nil
}

// probe asks every endpoint for its status, all at once, and succeeds when one answers.
func (c *Client) probe(ctx context.Context) error {
	errs := make([]error, len(c.opts.Endpoints))
	var wg sync.WaitGroup
	for i, ep := range c.opts.Endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, c.opts.DialTimeout)
			defer cancel()
			if _, err := c.cli.Status(pctx, ep); err != nil {
				// The etcd client reports a refused TLS handshake as a timeout: say why.
				if terr := diagnoseTLS(ctx, ep, c.opts.TLS, c.opts.DialTimeout); terr != nil {
					err = terr
				}
				errs[i] = fmt.Errorf("etcd at %s unreachable: %w", ep, err)
				c.log.Warn("etcd endpoint unreachable", zap.String("endpoint", ep), zap.Error(err))
			}
		}()
	}
	wg.Wait()
	if slices.Contains(errs, nil) {
		return nil
	}
	var terr *tlsError
	if errors.As(errors.Join(errs...), &terr) {
		return errors.Join(errs...) // the TLS problem says what to do
	}
	return fmt.Errorf("%w (is etcd running there? check --etcd and the firewall)", errors.Join(errs...))
}

// Close ends the client's watches and keep-alives and closes its connections. Memberships are
// not revoked (use Membership.Leave for that): their leases expire after their TTL.
func (c *Client) Close() error { return c.cli.Close() }

// Fleet returns the fleet's name.
func (c *Client) Fleet() string { return c.fleet }

// Prefix returns the key prefix of the fleet, /bootfabric/<fleet>/.
func (c *Client) Prefix() string { return c.keys.prefix }

// do runs one request with the request timeout, observing its latency and error under op.
func (c *Client) do(ctx context.Context, op string, f func(ctx context.Context) error) error {
	rctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	start := time.Now()
	err := f(rctx)
	c.metrics.observe(op, time.Since(start), err)
	return err
}
