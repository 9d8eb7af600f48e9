package fleet

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Member is one live member of the fleet as etcd sees it.
type Member struct {
	Name     string
	Info     []byte // what the member joined with
	LeaseID  int64
	Revision int64 // the revision at which it joined (a re-join gives a new one)
}

// Members returns the live members, sorted by name, and the revision they were read at.
func (c *Client) Members(ctx context.Context) ([]Member, int64, error) {
	kvs, rev, err := c.getPrefix(ctx, "members_get", c.keys.membersPrefix())
	if err != nil {
		return nil, 0, err
	}
	set := make(map[string]Member, len(kvs))
	for _, kv := range kvs {
		if m, ok := c.member(kv); ok {
			set[m.Name] = m
		}
	}
	return sortedMembers(set), rev, nil
}

// WatchMembers delivers the full live set, sorted by name, now and after every change, until ctx
// ends or the client is closed; then the channel is closed. It survives etcd restarts and member failures. A consumer
// that falls behind gets fewer, never stale, sets: each one delivered is the newest.
func (c *Client) WatchMembers(ctx context.Context) <-chan []Member {
	out := make(chan []Member)
	latest := make(chan []Member, 1) // the newest set not yet taken by out
	watching := make(chan struct{})  // closed when the watch has ended (ctx, or the client closed)
	go func() {
		defer close(out)
		for {
			select {
			case set := <-latest:
				if !send(ctx, out, set) {
					return
				}
			case <-watching:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	publish := func(set []Member) {
		select {
		case <-latest: // replaced by the newer set
		default:
		}
		latest <- set
	}
	go func() {
		defer close(watching)
		set := map[string]Member{}
		c.watchKeys(ctx, "members_watch", c.keys.membersPrefix(), true, watcher{
			reset: func(kvs []*mvccpb.KeyValue, _ int64) bool {
				clear(set)
				for _, kv := range kvs {
					if m, ok := c.member(kv); ok {
						set[m.Name] = m
					}
				}
				publish(sortedMembers(set))
				return true
			},
			apply: func(evs []*clientv3.Event, _ int64) bool {
				for _, ev := range evs {
					switch ev.Type {
					case clientv3.EventTypePut:
						if m, ok := c.member(ev.Kv); ok {
							set[m.Name] = m
						}
					case clientv3.EventTypeDelete:
						delete(set, strings.TrimPrefix(string(ev.Kv.Key), c.keys.membersPrefix()))
					}
				}
				publish(sortedMembers(set))
				return true
			},
		})
	}()
	return out
}

// member decodes a member key.
func (c *Client) member(kv *mvccpb.KeyValue) (Member, bool) {
	name, ok := strings.CutPrefix(string(kv.Key), c.keys.membersPrefix())
	if !ok || name == "" {
		return Member{}, false
	}
	return Member{Name: name, Info: kv.Value, LeaseID: kv.Lease, Revision: kv.CreateRevision}, true
}

func sortedMembers(set map[string]Member) []Member {
	out := make([]Member, 0, len(set))
	for _, name := range slices.Sorted(maps.Keys(set)) {
		out = append(out, set[name])
	}
	return out
}

// LeaseTTL returns how long a member's lease has left and the TTL it was granted: the granted TTL
// minus what is left is how long ago the member last renewed it. A lease that is gone has 0 left.
func (c *Client) LeaseTTL(ctx context.Context, id int64) (left, granted time.Duration, err error) {
	var resp *clientv3.LeaseTimeToLiveResponse
	err = c.do(ctx, "lease_ttl", func(ctx context.Context) (err error) {
		resp, err = c.cli.TimeToLive(ctx, clientv3.LeaseID(id))
		return err
	})
	if err != nil {
		return 0, 0, c.wrap("lease time to live", err)
	}
	if resp.TTL < 0 {
		return 0, time.Duration(resp.GrantedTTL) * time.Second, nil
	}
	return time.Duration(resp.TTL) * time.Second, time.Duration(resp.GrantedTTL) * time.Second, nil
}
