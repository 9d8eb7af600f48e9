package power

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"regexp"
	"sort"
	"syscall"

	"gopkg.in/yaml.v3"
)

// yamlLine finds the line a yaml error names.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// Credentials are the users and passwords of the BMCs, by the reference the inventory gives each
// node (its bmc_creds column). They live in a file of their own, readable by its owner only, and
// never in etcd, the logs, the metrics or an error.
type Credentials struct {
	file  string
	byRef map[string]Credential
}

// Credential is one BMC login.
type Credential struct {
	User     string `yaml:"user"`
	Password string `yaml:"password"`
}

// String hides the password: a Credential printed by mistake shows only its user.
func (c Credential) String() string { return "user " + c.User }

// maxCredsFile bounds what is read of a credentials file.
const maxCredsFile = 1 << 20

// LoadCredentials reads a credentials file: YAML, a map from reference to {user, password}:
//
//	default: {user: admin, password: "..."}
//	rack7:   {user: root,  password: "..."}
//
// A file its group or others may read is refused, as ssh refuses such a private key.
func LoadCredentials(path string) (*Credentials, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("credentials: %w", err)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("credentials %s: mode %04o lets others read it: chmod 600 %s", path, perm, path)
	}
	// As ssh does for a private key: a file someone else owns could be rewritten by them.
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Uid != 0 && int(st.Uid) != os.Geteuid() {
		return nil, fmt.Errorf("credentials %s: owned by uid %d, not by you (uid %d) or root: chown %d %s", path, st.Uid, os.Geteuid(), os.Geteuid(), path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxCredsFile+1))
	if err != nil {
		return nil, fmt.Errorf("credentials %s: %w", path, err)
	}
	if len(data) > maxCredsFile {
		return nil, fmt.Errorf("credentials %s: over %d bytes", path, maxCredsFile)
	}
	c := &Credentials{file: path, byRef: map[string]Credential{}}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c.byRef); err != nil && err != io.EOF {
		// yaml's messages quote the values they could not read, and a value here may be a
		// password: say where, never what.
		where := ""
		if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
			where = ":" + m[1]
		}
		return nil, fmt.Errorf("credentials %s%s: want a map of NAME: {user: U, password: P}", path, where)
	}
	for _, ref := range c.Refs() {
		if c.byRef[ref].User == "" {
			return nil, fmt.Errorf("credentials %s: %s: no user", path, ref)
		}
	}
	return c, nil
}

// Get returns the login of a reference.
func (c *Credentials) Get(ref string) (Credential, error) {
	cr, ok := c.byRef[ref]
	if !ok {
		return Credential{}, fmt.Errorf("credentials %s: no entry %q (entries: %v)", c.file, ref, c.Refs())
	}
	return cr, nil
}

// Refs lists the references, sorted.
func (c *Credentials) Refs() []string {
	out := make([]string, 0, len(c.byRef))
	for r := range c.byRef {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}
