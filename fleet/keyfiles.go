package fleet

import (
	"fmt"
	"io"
	"os"
)

// KeyFiles are a fleet's key files: the operator's private key (Private, mode 600), which signs
// revisions and stays with the operator, and beside it Public (FILE.pub) and Secret (FILE.secret,
// mode 600), which go to every server. Key is the public key's KeyID.
type KeyFiles struct {
	Private string `json:"private"`
	Public  string `json:"public"`
	Secret  string `json:"secret"`
	Key     string `json:"key"`
}

// WriteKeyFiles makes a new signing key pair and fleet secret into path, path.pub and
// path.secret. It never replaces a file (the error is fs.ErrExist's): a lost private key would
// lock the operator out of every server that trusts it.
func WriteKeyFiles(path string) (KeyFiles, error) {
	res := KeyFiles{Private: path, Public: path + ".pub", Secret: path + ".secret"}
	priv, pub, err := GenerateSigningKey(nil)
	if err != nil {
		return res, err
	}
	keys, err := ParseTrustedKeys(pub)
	if err != nil {
		return res, err
	}
	res.Key = KeyID(keys[0])
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{res.Private, priv, 0o600}, {res.Public, pub, 0o644}, {res.Secret, GenerateFleetSecret(), 0o600}} {
		if err := writeNewFile(f.path, f.data, f.mode); err != nil {
			return res, err
		}
	}
	return res, nil
}

// writeNewFile creates path with data and mode, failing if it exists.
func writeNewFile(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// WriteText says where each file went and where it belongs: the private key stays with the
// operator, the other two go to every server.
func (k KeyFiles) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "key %s: private %s (keep it off the servers); to every server: %s (serve --config-key) and %s (serve --fleet-secret)\n",
		k.Key, k.Private, k.Public, k.Secret)
	return err
}
