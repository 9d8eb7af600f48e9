package bootsrv

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/dhcpd"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/nodestate"
	"go.uber.org/zap"
)

// minSecretLen bounds the secrets and tokens read from files, in bytes.
const minSecretLen = 16

// nodeTokenLen is the length of a node token in hex digits (128 bits).
const nodeTokenLen = 32

// nodeAuth derives and checks node tokens. A nil secret turns node authentication off.
//
// The boot network is shared with hosts the server cannot vet: a node proves itself with a token
// that only its own iPXE script carries, and that script is served only to the node's address.
type nodeAuth struct {
	secret []byte
	// issuer is the server's name, bound into every token: the node spends its token at the
	// server that wrote its script (the script's URLs are that server's).
	issuer string
}

// token returns the node's token for one boot attempt: HMAC-SHA256 of its name, the attempt's
// number and the issuing server's name under the secret, so that the server keeps no per-node
// secret and every restart agrees. The node learns it from its iPXE script in that attempt and
// spends it on the attempt's health report (NodeStatus's AttemptOpen): a token taken from a node
// that is down or already booted opens nothing.
//
// The issuer is in it because two servers of a fleet may number one node's attempts alike: a
// server cut off from etcd goes on with its home nodes unsaved, and the server that takes them
// over starts from their last saved attempt. Without the issuer, a script of the new holder's
// next attempt could carry the token the node booted with from the old one.
func (a nodeAuth) token(name string, attempt int) string {
	return a.mac("bootfabric node token", name+"\x00"+strconv.Itoa(attempt)+"\x00"+a.issuer)
}

// addressToken is the {token} of a proxy-mode node's script URL: it proves that this server's
// DHCP answer reached the node's MAC, which lets the script fetch name the node's address. It
// opens no attempt and is no node token.
func (a nodeAuth) addressToken(name string) string {
	return a.mac("bootfabric node address token", name)
}

func (a nodeAuth) mac(domain, msg string) string {
	if a.secret == nil {
		return ""
	}
	m := hmac.New(sha256.New, a.secret)
	m.Write([]byte(domain + "\x00" + msg))
	return hex.EncodeToString(m.Sum(nil))[:nodeTokenLen]
}

// check reports whether tok is the node's token for the attempt (always true when authentication
// is off).
func (a nodeAuth) check(name string, attempt int, tok string) bool {
	return a.equal(a.token(name, attempt), tok)
}

func (a nodeAuth) equal(want, tok string) bool {
	if a.secret == nil {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(tok)) == 1
}

// fleetNodeSecret derives a fleet's node secret from its fleet secret (the witness's MACs use
// the fleet secret under another domain).
func fleetNodeSecret(fleetSecret []byte) []byte {
	m := hmac.New(sha256.New, fleetSecret)
	m.Write([]byte("bootfabric fleet node secret"))
	return m.Sum(nil)
}

// readSecret reads a secret or token file, creating it with a random value (mode 0600) when it does
// not exist. Errors name the file and what to do.
func readSecret(path, what string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return createSecret(path, what)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	v := strings.TrimSpace(string(b))
	if len(v) < minSecretLen {
		return nil, fmt.Errorf("%s %s: %d characters, want at least %d (remove the file to have a random one written at start)", what, path, len(v), minSecretLen)
	}
	return []byte(v), nil
}

func createSecret(path, what string) ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	v := hex.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	// O_EXCL: two servers starting at once on one directory must not each write their own.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readSecret(path, what)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	_, err = f.WriteString(v + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, path, err)
	}
	return []byte(v), nil
}

// ReadOperatorToken reads the operator token file of a client (bootctl node reboot).
func ReadOperatorToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("operator token: %w", err)
	}
	v := strings.TrimSpace(string(b))
	if len(v) < minSecretLen {
		return "", fmt.Errorf("operator token %s: %d characters, want at least %d", path, len(v), minSecretLen)
	}
	if strings.ContainsFunc(v, func(r rune) bool { return r <= ' ' || r > '~' }) {
		return "", fmt.Errorf("operator token %s: not one line of printable characters without spaces", path)
	}
	return v, nil
}

// remoteAddr returns a request's source address (unmapped), or the zero Addr.
func remoteAddr(r *http.Request) netip.Addr {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// requestToken returns the token of a request: the token query parameter (what the iPXE script's
// URLs carry) or an Authorization: Bearer header.
func requestToken(r *http.Request) string {
	if t := r.URL.Query().Get("token"); t != "" {
		return t
	}
	if v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(v)
	}
	return ""
}

// authError is a refused request: its HTTP status and why.
type authError struct {
	code int
	msg  string
}

func (e *authError) Error() string { return e.msg }

// NodeCheck is what a node request presents: the address it came from, the node's known address
// (empty when none is known yet: proxy mode) and whether its token is the node's.
type NodeCheck struct {
	From     netip.Addr
	NodeIP   string
	TokenOK  bool
	AuthOn   bool
	NeedAddr bool
}

// CheckNode decides whether a request may act for a node. It is pure. A request must come from the
// node's known address and, with authentication on, carry the node's token; when the node has no
// known address (NeedAddr false, proxy mode before its first script) the token alone is enough.
func CheckNode(name string, c NodeCheck) error {
	if c.AuthOn && !c.TokenOK {
		return &authError{http.StatusUnauthorized, fmt.Sprintf("node %s: missing or wrong token (the token is in the node's iPXE script)", name)}
	}
	if c.NodeIP == "" {
		if c.NeedAddr {
			return &authError{http.StatusForbidden, fmt.Sprintf("node %s: no address known for it yet", name)}
		}
		return nil
	}
	if ip, err := netip.ParseAddr(c.NodeIP); err != nil || ip != c.From {
		return &authError{http.StatusForbidden, fmt.Sprintf("node %s: request from %s, not from the node's address", name, c.From)}
	}
	return nil
}

// nodeCheck gathers what CheckNode needs about a request for the named node.
func (s *Server) nodeCheck(r *http.Request, name string, st nodestate.NodeStatus) NodeCheck {
	return NodeCheck{
		From: remoteAddr(r), NodeIP: st.IP, TokenOK: s.nodes.check(name, st.Attempt, requestToken(r)),
		AuthOn: s.nodes.secret != nil, NeedAddr: s.cfg.DHCP.Mode != dhcpd.ModeProxy,
	}
}

// operatorAuth checks an operator request: from loopback unless http.operator_remote, and with
// the bearer token of http.operator_token_file.
func (s *Server) operatorAuth(r *http.Request) error {
	if from := remoteAddr(r); !s.cfg.HTTP.OperatorRemote && !fromThisHost(r, from) {
		return &authError{http.StatusForbidden, fmt.Sprintf("operator requests are accepted from this host only (request from %s; set http.operator_remote to allow others)", from)}
	}
	v, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(v)), s.operatorToken) != 1 {
		// The message names the setting, not the file: a client must not learn the server's paths.
		return &authError{http.StatusUnauthorized, "operator token required: send Authorization: Bearer <token>, the token of the server's http.operator_token_file"}
	}
	return nil
}

// fromThisHost says whether a request came from the server's own host: over loopback, or to one
// of the host's addresses from that same address (bootctl node reboot --server http://10.0.0.1
// on the server itself). No other host can open a TCP connection whose source is the server's
// address: the handshake's answer would never reach it.
func fromThisHost(r *http.Request, from netip.Addr) bool {
	if from.IsLoopback() {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return false
	}
	ap, err := netip.ParseAddrPort(local.String())
	return err == nil && ap.Addr().Unmap() == from
}

// refuse answers a refused request with its status and a JSON error.
func refuse(w http.ResponseWriter, err error) {
	var ae *authError
	if errors.As(err, &ae) {
		if ae.code == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bootfabric"`)
		}
		apiError(w, ae.code, "%s", ae.msg)
		return
	}
	apiError(w, http.StatusForbidden, "%v", err)
}

// inventoryAddr reports whether the inventory gives the node an address.
func (s *Server) inventoryAddr(name string) bool {
	n, ok := s.auth.Inventory().ByName(name)
	return ok && n.IP.IsValid()
}

// openAuth reads (creating at first start) the node secret and the operator token, and opens the
// confined file handles.
func (s *Server) openAuth(ipxe images.IPXE) error {
	h := s.cfg.HTTP
	if *h.NodeAuth {
		sec, err := readSecret(h.NodeSecretFile, "http.node_secret_file")
		if err != nil {
			return err
		}
		s.nodes = nodeAuth{secret: sec, issuer: s.cfg.Servers[s.cfg.ServerID].Name}
	}
	tok, err := readSecret(h.OperatorTokenFile, "http.operator_token_file")
	if err != nil {
		return err
	}
	s.operatorToken = tok
	if s.files, err = openConfined(ipxe, s.images); err != nil {
		return fmt.Errorf("%s: %w", s.cfg.File(), err)
	}
	if out := s.files.outside(); len(out) > 0 {
		s.log.Warn("iPXE binaries leading out of ipxe_dir to a file of another name are not served, over TFTP or HTTP (copy them into it)",
			zap.String("ipxe_dir", s.files.ipxeDir), zap.Strings("files", out))
	}
	return nil
}

// proxyToken is the {token} of a proxy-mode node's script URL.
func (s *Server) proxyToken(mac net.HardwareAddr) string {
	name, ok := s.tracker.NameByMAC(mac)
	if !ok {
		return ""
	}
	return s.nodes.addressToken(name)
}

// httpServer is the HTTP server with the timeouts of the configuration.
func (s *Server) httpServer() *http.Server {
	h := s.cfg.HTTP
	return &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: time.Duration(h.ReadHeaderTimeout),
		ReadTimeout:       time.Duration(h.ReadTimeout),
		WriteTimeout:      time.Duration(h.WriteTimeout),
		IdleTimeout:       time.Duration(h.IdleTimeout),
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          zap.NewStdLog(s.log.Named("http")),
	}
}

// maxHeaderBytes bounds a request's headers: iPXE, curl and wget send well under 1 KiB, and a
// Range header of a million parts is an attack.
const maxHeaderBytes = 64 << 10
