package bootsrv

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/bootfabric/bootfabric/fleet"
)

// MemberInfo is what a fleet server publishes with its membership (fleet.Client.Join), as JSON:
// how peers and `bootctl fleet status` reach it.
type MemberInfo struct {
	// URL is the server's HTTP base URL: peers fetch blobs from URL/blobs/sha256/SUM.
	URL string `json:"url"`
	// Address is the server's address on the boot network (servers[i].address).
	Address string `json:"address"`
	// Joined is when the server joined the fleet (its clock, UTC): etcd keeps only the revision
	// of the join, which says nothing to a person.
	Joined time.Time `json:"joined,omitzero"`
	// Running is the configuration revision the server serves, and Checked the newest it was
	// given and what it made of it: bootctl reads them back to tell the operator whether the
	// servers took the revision it wrote, and refuses to build on one older than they run.
	Running *RevisionInfo `json:"running,omitempty"`
	Checked *RevisionInfo `json:"checked,omitempty"`
}

// RevisionInfo names a configuration revision in a member's record.
type RevisionInfo struct {
	Revision int64  `json:"revision"` // etcd revision
	Number   int64  `json:"number"`
	Serial   uint64 `json:"serial"`
	SHA256   string `json:"sha256"`
	// Refused says why the server refuses it (fleet.Trust.Check); empty when it applies it.
	Refused string `json:"refused,omitempty"`
}

// revisionInfo names rev; refused is why it is refused, or nil.
func revisionInfo(rev fleet.ConfigRevision, refused error) *RevisionInfo {
	ri := &RevisionInfo{Revision: rev.Revision, Number: rev.Number, Serial: rev.Serial, SHA256: rev.SHA256}
	if refused != nil {
		ri.Refused = refused.Error()
	}
	return ri
}

// JoinFleet makes server name a member of c's fleet for ttl, publishing info (Joined set to now
// unless set).
// The membership is the caller's to Leave; FleetOptions.Membership takes it.
func JoinFleet(ctx context.Context, c *fleet.Client, name string, info MemberInfo, ttl time.Duration) (*fleet.Membership, error) {
	if info.Joined.IsZero() {
		info.Joined = time.Now().UTC()
	}
	b, err := json.Marshal(info)
	if err != nil {
		return nil, fmt.Errorf("fleet %s: joining as %s: %w", c.Fleet(), name, err)
	}
	m, err := c.Join(ctx, name, b, ttl)
	if err != nil {
		return nil, fmt.Errorf("fleet %s: joining as %s: %w", c.Fleet(), name, err)
	}
	return m, nil
}

// DecodeMemberInfo reads what member mb published; ok is false when it is not a MemberInfo (a
// member without a readable record still holds its lease, and counts as live).
func DecodeMemberInfo(mb fleet.Member) (_ MemberInfo, ok bool) {
	var info MemberInfo
	if json.Unmarshal(mb.Info, &info) != nil {
		return MemberInfo{}, false
	}
	return info, true
}
