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
}

// JoinFleet makes server name a member of c's fleet for ttl, publishing info (Joined set to now).
// The membership is the caller's to Leave; FleetOptions.Membership takes it.
func JoinFleet(ctx context.Context, c *fleet.Client, name string, info MemberInfo, ttl time.Duration) (*fleet.Membership, error) {
	info.Joined = time.Now().UTC()
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
