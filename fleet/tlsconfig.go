package fleet

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strings"
	"time"
)

// FileError is an error of LoadTLS or ReadSecretFile about one file: errors.As tells a caller
// which file (Path) was wrong, so that it can name its own flag or setting.
type FileError struct {
	What string // what the file is: "etcd CA file", "etcd client key", ...
	Path string
	Err  error
}

func (e *FileError) Error() string { return e.What + " " + e.Path + ": " + e.Err.Error() }
func (e *FileError) Unwrap() error { return e.Err }

// fileErr makes a FileError, without the path twice when err is an *fs.PathError of it.
func fileErr(what, path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path == path {
		err = pe.Err
	}
	return &FileError{What: what, Path: path, Err: err}
}

// LoadTLS builds the TLS configuration of an etcd client (Options.TLS): the CA that signed the
// etcd members' certificates from caFile, and this client's certificate and key from certFile and
// keyFile (PEM), which etcd's --client-cert-auth checks and whose common name is the etcd user
// once authentication is enabled. Its errors are *FileError.
//
// caFile may be empty to trust the system's CAs; certFile and keyFile are given both or neither
// (then the client presents no certificate, and an etcd with --client-cert-auth refuses it). A key
// file that its group or others may read or write is refused: whoever reads it is that etcd user.
func LoadTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fileErr("etcd CA file", caFile, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fileErr("etcd CA file", caFile, errors.New("no PEM certificate in it"))
		}
		cfg.RootCAs = pool
	}
	switch {
	case certFile == "" && keyFile == "":
		return cfg, nil
	case certFile == "":
		return nil, fileErr("etcd client key", keyFile, errors.New("given without its certificate file"))
	case keyFile == "":
		return nil, fileErr("etcd client certificate", certFile, errors.New("given without its key file"))
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fileErr("etcd client certificate", certFile, err)
	}
	keyPEM, err := readPrivateFile("etcd client key", keyFile)
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fileErr("etcd client certificate", certFile, fmt.Errorf("with key %s: %w", keyFile, err))
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}

// ReadSecretFile reads a password (Options.Password) from path: the file's content without one
// trailing newline ("\n" or "\r\n"). A file that its group or others may read or write is
// refused, and so is an empty one. Its errors are *FileError.
func ReadSecretFile(path string) (string, error) {
	b, err := readPrivateFile("secret file", path)
	if err != nil {
		return "", err
	}
	s := string(b)
	if t, ok := strings.CutSuffix(s, "\n"); ok {
		s = strings.TrimSuffix(t, "\r")
	}
	if s == "" {
		return "", fileErr("secret file", path, errors.New("empty"))
	}
	return s, nil
}

// errReadableByOthers is why readPrivateFile refuses a file (mode & 0o077 != 0).
var errReadableByOthers = errors.New("its group or others may read or write it; chmod 600 it")

// readPrivateFile reads a file that only its owner may read or write (mode & 0o077 == 0).
func readPrivateFile(what, path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileErr(what, path, err)
	}
	defer f.Close()
	fi, err := f.Stat() // the file opened, not whatever the path names a moment later
	if err != nil {
		return nil, fileErr(what, path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fileErr(what, path, fmt.Errorf("not a regular file (%v)", fi.Mode().Type()))
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fileErr(what, path, fmt.Errorf("mode %04o: %w", perm, errReadableByOthers))
	}
	const limit = 1 << 20 // a key or a password, not a data file
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fileErr(what, path, err)
	}
	if len(b) > limit {
		return nil, fileErr(what, path, fmt.Errorf("over %d bytes: not a key or a password", limit))
	}
	return b, nil
}

// tlsError is a TLS problem between the client and an etcd endpoint, with what to do about it.
type tlsError struct {
	msg string
	err error
}

func (e *tlsError) Error() string { return e.msg + ": " + e.err.Error() }
func (e *tlsError) Unwrap() error { return e.err }

// diagnoseTLS finds out whether ep did not answer because of TLS, which the etcd client reports
// only as a timeout: it dials ep itself, with cfg (nil: plain), and returns the TLS problem, or nil
// when there is none to see (etcd down, or answering). Only for errors: it takes a round trip and,
// when the handshake works, up to timeout/4 waiting for a refusal of the client's certificate.
func diagnoseTLS(ctx context.Context, ep string, cfg *tls.Config, timeout time.Duration) error {
	addr := ep
	if u, err := url.Parse(ep); err == nil && (u.Scheme == "http" || u.Scheme == "https") {
		addr = u.Host
	} else if strings.Contains(ep, "://") {
		return nil // unix sockets and the like: nothing to learn here
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	raw, err := (&net.Dialer{}).DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil // not a TLS matter
	}
	defer raw.Close()
	if dl, ok := dctx.Deadline(); ok {
		raw.SetDeadline(dl)
	}
	if cfg == nil {
		// Does it speak TLS? A plain etcd answers a ClientHello with an HTTP error, never a
		// ServerHello.
		err := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}).HandshakeContext(dctx)
		if err == nil || isAlert(err) {
			return &tlsError{"etcd serves TLS, and this client has no TLS configuration (give the CA, and a client certificate and key: bootctl --etcd-ca, --etcd-cert, --etcd-key)",
				errors.New("plain connection refused")}
		}
		return nil
	}
	cfg = cfg.Clone()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	conn := tls.Client(raw, cfg)
	if err := conn.HandshakeContext(dctx); err != nil {
		return handshakeError(cfg, err)
	}
	// In TLS 1.3 the server checks the client's certificate after the handshake: a refusal comes
	// as an alert on the first read. etcd sends nothing first, so a quiet connection is fine.
	conn.SetReadDeadline(time.Now().Add(timeout / 4))
	if _, err := conn.Read(make([]byte, 1)); isAlert(err) {
		return certRefused(cfg, err)
	}
	return nil
}

// handshakeError says what a failed TLS handshake with etcd means.
func handshakeError(cfg *tls.Config, err error) error {
	var unknownCA x509.UnknownAuthorityError
	var wrongHost x509.HostnameError
	var rec tls.RecordHeaderError
	switch {
	case errors.As(err, &unknownCA):
		return &tlsError{"etcd's certificate is not signed by the CA given", err}
	case errors.As(err, &wrongHost):
		return &tlsError{"etcd's certificate is not for this address (connect by a name or address it holds)", err}
	case errors.As(err, &rec):
		return &tlsError{"etcd does not serve TLS here (give its endpoints without TLS, or enable TLS on it)", err}
	case isAlert(err):
		return certRefused(cfg, err)
	}
	return &tlsError{"TLS handshake", err}
}

// isAlert reports whether err is a TLS alert from the other side ("remote error: tls: ...").
func isAlert(err error) bool {
	var op *net.OpError
	var alert tls.AlertError
	return errors.As(err, &op) && op.Op == "remote error" || errors.As(err, &alert)
}

// certRefused says why etcd refused the handshake with an alert: no client certificate, or one
// it does not trust.
func certRefused(cfg *tls.Config, err error) error {
	if len(cfg.Certificates) == 0 && cfg.GetClientCertificate == nil {
		return &tlsError{"etcd requires a client certificate and this client has none (give a certificate and its key: bootctl --etcd-cert, --etcd-key)", err}
	}
	return &tlsError{"etcd refused this client's certificate (is it signed by the CA etcd trusts, and still valid?)", err}
}
