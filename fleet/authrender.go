package fleet

import (
	"fmt"
	"io"
	"strings"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// AuthResult is what setting up a fleet's etcd users did: their roles, and whether etcd's
// authentication is on.
type AuthResult struct {
	Fleet string     `json:"fleet"`
	Roles []AuthRole `json:"roles"`
	// Enabled: authentication was turned on (or it was on already).
	Enabled bool `json:"auth_enabled"`
}

// WriteTable writes the users set up and, for each, the keys (below the fleet's prefix; * for a
// prefix) its role reads and writes.
func (r *AuthResult) WriteTable(w io.Writer) error {
	prefix := Root + r.Fleet + "/"
	fmt.Fprintf(w, "fleet %s: %s and their roles set up; keys below are under %s\n", r.Fleet, texttable.Plural(len(r.Roles), "etcd user"), prefix)
	if r.Enabled {
		fmt.Fprintln(w, "etcd's authentication is on: every request needs a user (certificate common name, or user and password)")
	} else {
		fmt.Fprintln(w, "etcd's authentication is not turned on by this run: run again with --enable once root can connect")
	}
	fmt.Fprintln(w)
	t := texttable.New(w)
	t.Row("USER", "ROLE", "READ", "READ AND WRITE")
	for _, role := range r.Roles {
		var read, write []string
		for _, p := range role.Perms {
			k := strings.TrimPrefix(p.Key, prefix)
			if p.Prefix {
				k += "*"
			}
			if p.Write {
				write = append(write, k)
			} else {
				read = append(read, k)
			}
		}
		t.Row(role.User, role.Name, texttable.OrDash(strings.Join(read, " ")), texttable.OrDash(strings.Join(write, " ")))
	}
	return t.Flush()
}
