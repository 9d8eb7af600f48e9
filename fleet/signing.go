package fleet

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Key files are PEM: the private key as PKCS #8 ("PRIVATE KEY"), the public keys as PKIX ("PUBLIC
// KEY"), the formats `openssl genpkey -algorithm ed25519` and `openssl pkey -pubout` write.
const (
	pemPrivate = "PRIVATE KEY"
	pemPublic  = "PUBLIC KEY"
)

// maxKeyFile bounds what is read of a key file: a key is under 200 bytes, a list of them a few KiB.
const maxKeyFile = 64 << 10

var (
	// ErrUnsigned is returned by ConfigRevision.Verify for a revision that carries no signature.
	ErrUnsigned = errors.New("configuration revision is not signed")
	// ErrUntrusted is returned by ConfigRevision.Verify when no trusted key verifies the signature.
	ErrUntrusted = errors.New("configuration revision is not signed by a trusted key")
)

// GenerateSigningKey makes a new operator key and returns it and its public key, PEM encoded.
//
// Write access to etcd must not be enough to publish a kernel: servers apply only revisions
// signed by the operator's key (over the fleet, the serial and the sha256, so none is replayed).
func GenerateSigningKey(r io.Reader) (private, public []byte, err error) {
	if r == nil {
		r = rand.Reader
	}
	pub, priv, err := ed25519.GenerateKey(r)
	if err != nil {
		return nil, nil, err
	}
	der, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivate, Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: pemPublic, Bytes: pubDER}), nil
}

// LoadSigningKey reads an operator's private key. A file that its group or others may read is
// refused: a copy of it publishes kernels.
func LoadSigningKey(path string) (ed25519.PrivateKey, error) {
	data, err := readKeyFile("signing key", path, true)
	if err != nil {
		return nil, err
	}
	b, _ := pem.Decode(data)
	if b == nil || b.Type != pemPrivate {
		return nil, fmt.Errorf("signing key %s: not a PEM %q block (make one with bootctl fleet keygen)", path, pemPrivate)
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("signing key %s: %w", path, err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key %s: a %T, want an ed25519 key", path, k)
	}
	return priv, nil
}

// LoadTrustedKeys reads the public keys a server trusts to sign configurations: one or more PEM
// "PUBLIC KEY" blocks (several while a key is being replaced).
func LoadTrustedKeys(path string) ([]ed25519.PublicKey, error) {
	data, err := readKeyFile("trusted keys", path, false)
	if err != nil {
		return nil, err
	}
	keys, err := ParseTrustedKeys(data)
	if err != nil {
		return nil, fmt.Errorf("trusted keys %s: %w", path, err)
	}
	return keys, nil
}

// ParseTrustedKeys parses PEM "PUBLIC KEY" blocks of ed25519 keys.
func ParseTrustedKeys(data []byte) ([]ed25519.PublicKey, error) {
	var keys []ed25519.PublicKey
	for n := 1; ; n++ {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		if b.Type != pemPublic {
			return nil, fmt.Errorf("block %d is %q, want %q", n, b.Type, pemPublic)
		}
		k, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", n, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("block %d is a %T, want an ed25519 key", n, k)
		}
		keys = append(keys, pub)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("no PEM %q block (the .pub file bootctl fleet keygen writes)", pemPublic)
	}
	return keys, nil
}

// readKeyFile reads a key file, refusing one that is too large and, when private, one that its
// group or others may read (readPrivateFile).
func readKeyFile(what, path string, private bool) ([]byte, error) {
	if private {
		return readPrivateFile(what, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fileErr(what, path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, fileErr(what, path, err)
	}
	if len(data) > maxKeyFile {
		return nil, fileErr(what, path, fmt.Errorf("over %d bytes", maxKeyFile))
	}
	return data, nil
}

// FleetSecretSize is the size of a fleet secret: the servers' shared secret that authenticates their
// answers to a fenced peer (bootsrv's witness), an HMAC-SHA256 key.
const FleetSecretSize = 32

// GenerateFleetSecret makes a fleet secret, hex encoded as its file holds it.
func GenerateFleetSecret() []byte {
	k := make([]byte, FleetSecretSize)
	rand.Read(k)
	return []byte(hex.EncodeToString(k) + "\n")
}

// LoadFleetSecret reads a fleet secret file: the hex of at least FleetSecretSize bytes, readable by
// its owner only.
func LoadFleetSecret(path string) ([]byte, error) {
	data, err := readKeyFile("fleet secret", path, true)
	if err != nil {
		return nil, err
	}
	k, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil || len(k) < FleetSecretSize {
		return nil, fmt.Errorf("fleet secret %s: want the hex of at least %d random bytes (bootctl fleet keygen writes one)", path, FleetSecretSize)
	}
	return k, nil
}

// KeyID names a public key in logs and listings: the first 8 bytes of its sha256, in hex.
func KeyID(pub ed25519.PublicKey) string {
	sum := sha256.Sum256(pub)
	return hex.EncodeToString(sum[:8])
}

// signedMessage is what a revision's signature covers.
func signedMessage(fleet string, serial uint64, sum []byte) []byte {
	msg := make([]byte, 0, 64+len(fleet))
	msg = append(msg, "bootfabric fleet configuration\x00"...)
	msg = append(msg, fleet...)
	msg = append(msg, 0)
	msg = binary.BigEndian.AppendUint64(msg, serial)
	return append(msg, sum...)
}

// Verify checks the revision's signature against the trusted keys.
func (r ConfigRevision) Verify(trusted []ed25519.PublicKey) error {
	if len(r.Signature) == 0 {
		return ErrUnsigned
	}
	sum, err := hex.DecodeString(r.SHA256)
	if err != nil {
		return err
	}
	msg := signedMessage(r.fleet, r.Serial, sum)
	for _, k := range trusted {
		if ed25519.Verify(k, msg, r.Signature) {
			return nil
		}
	}
	return fmt.Errorf("%w (signed by key %s)", ErrUntrusted, r.KeyID)
}
