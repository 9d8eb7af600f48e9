package etcdtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestStartTLS starts a TLS cluster and checks what it lets in: a client certificate from
// ClientCert over https, nothing without one, nothing over plain http.
func TestStartTLS(t *testing.T) {
	c := Start(t, Options{TLS: true})
	if c.CAFile == "" {
		t.Fatal("no CAFile")
	}
	caPEM, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s: no certificate", c.CAFile)
	}
	certFile, keyFile := c.ClientCert(t, "alice")
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("client key %s: %v, mode %v, want 0600", keyFile, err, fi.Mode())
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	withCert := &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}}
	noCert := &tls.Config{RootCAs: pool}
	ep := c.Endpoints[0]

	health := []struct {
		name, url string
		tls       *tls.Config
		ok        bool
	}{
		{"https with a client certificate", "https://" + ep + "/health", withCert, true},
		{"https without a client certificate", "https://" + ep + "/health", noCert, false},
		{"plain http", "http://" + ep + "/health", nil, false},
	}
	for _, tt := range health {
		t.Run(tt.name, func(t *testing.T) {
			hc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: tt.tls}}
			defer hc.CloseIdleConnections()
			resp, err := hc.Get(tt.url)
			ok := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				resp.Body.Close()
			}
			if ok != tt.ok {
				t.Errorf("GET %s: %v (status %v), want ok=%v", tt.url, err, resp, tt.ok)
			}
		})
	}

	// The gRPC API, as fleet uses it: the endpoint as host:port with a TLS configuration.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints, TLS: withCert, DialTimeout: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put over TLS: %v", err)
	}
	resp, err := cli.Get(ctx, "k")
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "v" {
		t.Fatalf("get over TLS: %v %v", resp, err)
	}

	// A member restarted keeps its certificates.
	c.Member(0).Restart()
	if _, err := cli.Get(ctx, "k"); err != nil {
		t.Fatalf("get after restart: %v", err)
	}

	// With authentication on, /health still answers (the health checker is no etcd user) and
	// the certificate's common name is the user: alice, who has no role, reads nothing.
	if _, err := cli.UserAddWithOptions(ctx, "root", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserGrantRole(ctx, "root", "root"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.UserAddWithOptions(ctx, "alice", "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.AuthEnable(ctx); err != nil {
		t.Fatal(err)
	}
	c.Member(0).Restart()
	if _, err := cli.Get(ctx, "k"); err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Errorf("get as alice with authentication on: %v, want permission denied", err)
	}
}

// TestClientCertWithoutTLS: ClientCert on a plain cluster fails the test rather than return
// files that do not exist.
func TestClientCertWithoutTLS(t *testing.T) {
	c := &Cluster{}
	ft := &fatalTB{TB: t}
	func() {
		defer func() { recover() }()
		c.ClientCert(ft, "x")
	}()
	if !strings.Contains(ft.msg, "without TLS") {
		t.Errorf("ClientCert on a plain cluster: %q", ft.msg)
	}
}

// fatalTB records Fatalf and stops the calling function with a panic.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}
func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	panic("fatal")
}
