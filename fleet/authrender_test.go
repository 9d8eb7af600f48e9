package fleet

import (
	"strings"
	"testing"
)

// TestAuthTable: each user's keys are shown below the fleet's prefix, read apart from written,
// with "-" for none, and the line on authentication says whether it is on.
func TestAuthTable(t *testing.T) {
	roles, err := AuthRoles("f", []string{"bs0"}, "ops")
	if err != nil {
		t.Fatal(err)
	}
	for _, enabled := range []bool{false, true} {
		var b strings.Builder
		r := &AuthResult{Fleet: "f", Roles: roles, Enabled: enabled}
		if err := r.WriteTable(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if !strings.HasPrefix(out, "fleet f: 2 etcd users and their roles set up; keys below are under /bootfabric/f/\n") ||
			strings.Contains(out, "/bootfabric/f/members") || !strings.Contains(out, " members/bs0 records/*") || strings.Contains(out, "authentication is on") != enabled {
			t.Errorf("enabled %v:\n%s", enabled, out)
		}
	}
}
