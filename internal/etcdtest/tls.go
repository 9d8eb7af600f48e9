package etcdtest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// testCA is the certificate authority of one TLS cluster: it signs the members' server certificate
// and the clients' certificates. Keys are ECDSA P-256, the usual choice for etcd (its docs' cfssl
// examples); Ed25519 works as well with Debian's etcd 3.4.23, built with go1.19.
type testCA struct {
	dir  string // where the files go
	cert *x509.Certificate
	key  crypto.Signer
}

// newTestCA makes a CA and writes its certificate to dir/ca.pem.
func newTestCA(dir string) (*testCA, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := certTemplate("etcdtest CA")
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &testCA{dir: dir, cert: cert, key: key}
	if err := os.WriteFile(ca.file(), pemBlock("CERTIFICATE", der), 0o644); err != nil {
		return nil, err
	}
	return ca, nil
}

func (ca *testCA) file() string { return filepath.Join(ca.dir, "ca.pem") }

// certTemplate is a leaf or CA certificate valid from an hour ago for a day, with a random serial.
func certTemplate(cn string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"bootfabric etcdtest"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}, nil
}

// issue signs a leaf certificate for cn with the given extended key usages and SANs (hosts: IP
// addresses become IP SANs, other names DNS SANs) and returns it as a tls.Certificate with its
// certificate and key in PEM.
func (ca *testCA) issue(cn string, usage []x509.ExtKeyUsage, hosts ...string) (tls.Certificate, []byte, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl, err := certTemplate(cn)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl.ExtKeyUsage = usage
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("certificate for %s: %w", cn, err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	certPEM, keyPEM := pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", pkcs8)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	return pair, certPEM, keyPEM, err
}

// issueFiles issues a certificate and writes it and its key (mode 0600) to new files in the CA's
// directory, named after prefix.
func (ca *testCA) issueFiles(prefix, cn string, usage []x509.ExtKeyUsage, hosts ...string) (certFile, keyFile string, err error) {
	_, certPEM, keyPEM, err := ca.issue(cn, usage, hosts...)
	if err != nil {
		return "", "", err
	}
	// CreateTemp: a unique name whatever cn holds, and mode 0600.
	for _, f := range []struct {
		name *string
		data []byte
		kind string
	}{{&certFile, certPEM, "-*.crt"}, {&keyFile, keyPEM, "-*.key"}} {
		fh, err := os.CreateTemp(ca.dir, prefix+f.kind)
		if err != nil {
			return "", "", err
		}
		_, werr := fh.Write(f.data)
		if cerr := fh.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return "", "", werr
		}
		*f.name = fh.Name()
	}
	return certFile, keyFile, nil
}

// pool returns a certificate pool holding the CA.
func (ca *testCA) pool() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca.cert)
	return p
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// ClientCert issues a client certificate with the given common name (etcd's user name when
// authentication is on) and returns its certificate and key files (the key has mode 0600). It
// fails the test on a cluster started without Options.TLS.
func (c *Cluster) ClientCert(tb testing.TB, commonName string) (certFile, keyFile string) {
	tb.Helper()
	if c.ca == nil {
		tb.Fatalf("etcdtest: ClientCert on a cluster started without TLS")
	}
	certFile, keyFile, err := c.ca.issueFiles("client", commonName, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth})
	if err != nil {
		tb.Fatalf("etcdtest: client certificate %q: %v", commonName, err)
	}
	return certFile, keyFile
}
