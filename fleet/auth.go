package fleet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// RootUser is etcd's administrator: enabling authentication needs it, with the root role.
const RootUser = "root"

// rootRole is etcd's built-in role that may do everything; it needs no RoleAdd.
const rootRole = "root"

// AuthPerm is one permission of a role: read, or read and write, on one key or on every key under
// a prefix.
type AuthPerm struct {
	Key    string `json:"key"`
	Prefix bool   `json:"prefix"` // Key is a prefix: every key that starts with it
	Write  bool   `json:"write"`  // read and write; else read only
}

// AuthRole is a role that SetupAuth makes and the one user it grants it to.
type AuthRole struct {
	Name  string     `json:"role"`
	User  string     `json:"user"`
	Perms []AuthPerm `json:"permissions"`
}

// UserPassword gives a user that SetupAuth creates a password, for etcd's password authentication
// (Options.Username and Password). Users without one are created with no password at all: they
// authenticate only by a client certificate whose common name is their name.
type UserPassword struct {
	User, Password string
}

// ServerRole is the role of fleet server name: bootfabric-FLEET-server-NAME.
func ServerRole(fleet, name string) string { return "bootfabric-" + fleet + "-server-" + name }

// OperatorRole is the role of the fleet's operator: bootfabric-FLEET-operator.
func OperatorRole(fleet string) string { return "bootfabric-" + fleet + "-operator" }

// AuthRoles returns the roles SetupAuth makes for fleet: one per server, whose etcd user is the
// server's name, and one for the operator (none when operator is empty). Least privilege:
//
//   - a server reads the whole fleet (configuration, members, records, addresses, events), writes
//     its own member key (members/NAME, that exact key: Join, and Leave revokes the lease the key
//     is attached to, which etcd allows only to a user that may write every key of the lease),
//     and writes the shared keys: records/ (a takeover writes the records of another server's
//     nodes), addr/ and mac/ (any server hands out any address of the pool), events/ and
//     eventseq/. It cannot write the configuration nor another server's member key, so it
//     cannot join under another name nor change what every server runs;
//   - the operator reads and writes everything of the fleet (bootctl fleet apply, status).
//
// Servers are member names (no '/'); no user may be root, the operator may not be a server, and
// there must be one user at least.
func AuthRoles(fleet string, servers []string, operator string) ([]AuthRole, error) {
	if err := ValidFleetName(fleet); err != nil {
		return nil, err
	}
	if len(servers) == 0 && operator == "" {
		return nil, errors.New("no servers and no operator: nothing to set up")
	}
	k := newKeys(fleet)
	seen := map[string]bool{}
	var roles []AuthRole
	for _, s := range servers {
		if err := validElement("server name", s); err != nil {
			return nil, err
		}
		if s == RootUser {
			return nil, fmt.Errorf("server name %q: that is etcd's administrator, who may do everything", s)
		}
		if seen[s] {
			return nil, fmt.Errorf("server %q given twice", s)
		}
		seen[s] = true
		perms := []AuthPerm{
			{Key: k.prefix, Prefix: true},
			{Key: k.member(s), Write: true},
		}
		for _, p := range []string{"records/", "addr/", "mac/", "events/", "eventseq/"} {
			perms = append(perms, AuthPerm{Key: k.prefix + p, Prefix: true, Write: true})
		}
		roles = append(roles, AuthRole{Name: ServerRole(fleet, s), User: s, Perms: perms})
	}
	if operator != "" {
		if err := validElement("operator name", operator); err != nil {
			return nil, err
		}
		if operator == RootUser {
			return nil, fmt.Errorf("operator %q: that is etcd's administrator, who may do everything; name a user of its own", operator)
		}
		if seen[operator] {
			return nil, fmt.Errorf("operator %q is also a server: a server must not be able to change the configuration", operator)
		}
		roles = append(roles, AuthRole{Name: OperatorRole(fleet), User: operator,
			Perms: []AuthPerm{{Key: k.prefix, Prefix: true, Write: true}}})
	}
	return roles, nil
}

// SetupAuth makes the fleet's etcd users and roles (AuthRoles): it creates the users and roles
// missing, grants each user its role, and makes each role's permissions exactly the ones listed,
// revoking others under the fleet's prefix. It also makes sure etcd's root user exists with the
// root role, which EnableAuth needs. Running it again changes nothing; run it again with more
// servers to add them (removing a server's user is left to etcdctl user delete).
//
// Users are created without a password unless passwords name one: etcd with --client-cert-auth
// takes a client certificate's common name as the user name once authentication is enabled, so
// a server or operator authenticates by its certificate alone. A password is set only when its
// user is created; an existing user keeps what it has (etcd 3.4 cannot give a password to a user
// created without one: delete the user first).
//
// It must run with etcd's root credentials (a certificate with common name root, or the root user
// and its password), or on an etcd whose authentication is not enabled yet. The order is:
// SetupAuth, then EnableAuth, then the servers and the operator connect as their users.
func (c *Client) SetupAuth(ctx context.Context, servers []string, operator string, passwords ...UserPassword) error {
	roles, err := AuthRoles(c.fleet, servers, operator)
	if err != nil {
		return fmt.Errorf("fleet %s: auth setup: %w", c.fleet, err)
	}
	pw := map[string]string{}
	for _, p := range passwords {
		pw[p.User] = p.Password
	}
	if err := c.ensureUser(ctx, RootUser, pw[RootUser], rootRole, ""); err != nil {
		return err
	}
	for _, r := range roles {
		if err := c.ensureRole(ctx, r); err != nil {
			return err
		}
		// The role this user would hold under the other title (a server made operator, or the
		// reverse) is revoked: a user holds one role of the fleet.
		other := OperatorRole(c.fleet)
		if r.Name == other {
			other = ServerRole(c.fleet, r.User)
		}
		if err := c.ensureUser(ctx, r.User, pw[r.User], r.Name, other); err != nil {
			return err
		}
	}
	return nil
}

// EnableAuth turns etcd's authentication on (cluster-wide, for every fleet of this etcd): from
// then on every request needs a user, by certificate or password, and only root may manage users.
// It needs the root user with the root role (SetupAuth makes it). Enabling it again is a no-op.
func (c *Client) EnableAuth(ctx context.Context) error {
	err := c.do(ctx, "auth_enable", func(ctx context.Context) error {
		_, err := c.cli.AuthEnable(ctx)
		return err
	})
	if errors.Is(err, rpctypes.ErrRootUserNotExist) || errors.Is(err, rpctypes.ErrRootRoleNotExist) {
		return fmt.Errorf("fleet %s: enable auth: %w (set up the users first: SetupAuth, bootctl fleet auth)", c.fleet, err)
	}
	return c.authErr("enable auth", err)
}

// ensureRole creates r's role when missing and makes its permissions under the fleet's prefix
// exactly r.Perms. A role with permissions outside the prefix is not this fleet's: it is refused.
func (c *Client) ensureRole(ctx context.Context, r AuthRole) error {
	var have []*authpb.Permission
	err := c.do(ctx, "auth_role_get", func(ctx context.Context) error {
		resp, err := c.cli.RoleGet(ctx, r.Name)
		if err == nil {
			have = resp.Perm
		}
		return err
	})
	if errors.Is(err, rpctypes.ErrRoleNotFound) {
		err = c.do(ctx, "auth_role_add", func(ctx context.Context) error {
			_, err := c.cli.RoleAdd(ctx, r.Name)
			return err
		})
	}
	if err != nil {
		return c.authErr("look up or add role "+r.Name, err)
	}
	want := make([]*authpb.Permission, 0, len(r.Perms))
	for _, p := range r.Perms {
		want = append(want, p.etcd())
	}
	prefix := []byte(c.keys.prefix)
	for _, h := range have {
		if !bytes.HasPrefix(h.Key, prefix) {
			return fmt.Errorf("fleet %s: role %s exists with a permission on %q, outside %s: it is not this fleet's role; delete it or rename the fleet",
				c.fleet, r.Name, h.Key, c.keys.prefix)
		}
		if slices.ContainsFunc(want, func(w *authpb.Permission) bool { return samePermRange(w, h) }) {
			continue
		}
		err := c.do(ctx, "auth_role_revoke", func(ctx context.Context) error {
			_, err := c.cli.RoleRevokePermission(ctx, r.Name, string(h.Key), string(h.RangeEnd))
			return err
		})
		if err != nil {
			return c.authErr(fmt.Sprintf("role %s: revoke %q", r.Name, h.Key), err)
		}
	}
	for _, w := range want {
		if slices.ContainsFunc(have, func(h *authpb.Permission) bool { return samePermRange(w, h) && w.PermType == h.PermType }) {
			continue
		}
		err := c.do(ctx, "auth_role_grant", func(ctx context.Context) error {
			_, err := c.cli.RoleGrantPermission(ctx, r.Name, string(w.Key), string(w.RangeEnd), clientv3.PermissionType(w.PermType))
			return err
		})
		if err != nil {
			return c.authErr(fmt.Sprintf("role %s: grant %s on %q", r.Name, w.PermType, w.Key), err)
		}
	}
	return nil
}

// ensureUser creates user when missing (with password, or none when empty), grants it role, and
// revokes revoke from it when it holds it (unless empty).
func (c *Client) ensureUser(ctx context.Context, user, password, role, revoke string) error {
	var roles []string
	err := c.do(ctx, "auth_user_get", func(ctx context.Context) error {
		resp, err := c.cli.UserGet(ctx, user)
		if err == nil {
			roles = resp.Roles
		}
		return err
	})
	if errors.Is(err, rpctypes.ErrUserNotFound) {
		err = c.do(ctx, "auth_user_add", func(ctx context.Context) error {
			_, err := c.cli.UserAddWithOptions(ctx, user, password, &clientv3.UserAddOptions{NoPassword: password == ""})
			return err
		})
	}
	if err != nil {
		return c.authErr("look up or add user "+user, err)
	}
	if !slices.Contains(roles, role) {
		err := c.do(ctx, "auth_user_grant", func(ctx context.Context) error {
			_, err := c.cli.UserGrantRole(ctx, user, role)
			return err
		})
		if err != nil {
			return c.authErr(fmt.Sprintf("user %s: grant role %s", user, role), err)
		}
	}
	if revoke != "" && slices.Contains(roles, revoke) {
		err := c.do(ctx, "auth_user_revoke", func(ctx context.Context) error {
			_, err := c.cli.UserRevokeRole(ctx, user, revoke)
			return err
		})
		if err != nil {
			return c.authErr(fmt.Sprintf("user %s: revoke role %s", user, revoke), err)
		}
	}
	return nil
}

// authErr names the step of an auth setup that failed, and says whose credentials it needs when
// etcd refused them.
func (c *Client) authErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrUserEmpty) {
		return fmt.Errorf("fleet %s: auth setup: %s: %w (authentication is on: this needs etcd's root user, by a certificate with common name root or by its password)",
			c.fleet, op, err)
	}
	return c.wrap("auth setup: "+op, err)
}

// etcd is the permission as etcd stores it: a prefix as [Key, end of prefix).
func (p AuthPerm) etcd() *authpb.Permission {
	perm := &authpb.Permission{Key: []byte(p.Key), PermType: authpb.READ}
	if p.Prefix {
		perm.RangeEnd = []byte(clientv3.GetPrefixRangeEnd(p.Key))
	}
	if p.Write {
		perm.PermType = authpb.READWRITE
	}
	return perm
}

// samePermRange reports whether two permissions cover the same keys (etcd keeps one permission
// per range: granting another type on it replaces the type).
func samePermRange(a, b *authpb.Permission) bool {
	return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.RangeEnd, b.RangeEnd)
}
