package bootapi

import "github.com/bootfabric/bootfabric/nodestate"

// Merged is one node's record after Merge, with the index of the server whose record it is.
type Merged[T any] struct {
	From int
	Node T
}

// Merge is the one rule for what several servers say of the same nodes. lists holds each server's
// records, in the order the servers were asked; key gives a record's node name and boot attempt.
// Of the records that name a node, the one with the highest attempt wins; on equal attempts, the
// server asked first. The result has one record per node, in the order the nodes first appear.
//
// The attempt, not a time, decides: a node's attempt grows only on the server that answers it (in
// a fleet the new owner resumes the old owner's record and its count), so a copy left on a server
// that no longer answers the node is never ahead, and no two hosts' clocks need to agree. A boot
// run waits for a node's attempt to pass the one it saw at power-on, which this rule keeps
// meaningful; listing every copy instead would show a node twice and count it twice.
func Merge[T any](lists [][]T, key func(*T) (name string, attempt int)) []Merged[T] {
	var out []Merged[T]
	at := map[string]int{} // node name -> index in out
	for from, list := range lists {
		for i := range list {
			name, attempt := key(&list[i])
			j, seen := at[name]
			if !seen {
				at[name] = len(out)
				out = append(out, Merged[T]{From: from, Node: list[i]})
				continue
			}
			if _, held := key(&out[j].Node); attempt > held {
				out[j] = Merged[T]{From: from, Node: list[i]}
			}
		}
	}
	return out
}

// MergeNodes merges several servers' node lists (GET /api/v1/nodes) by Merge's rule.
func MergeNodes(lists [][]nodestate.NodeStatus) []nodestate.NodeStatus {
	merged := Merge(lists, func(n *nodestate.NodeStatus) (string, int) { return n.Name, n.Attempt })
	out := make([]nodestate.NodeStatus, len(merged))
	for i, m := range merged {
		out[i] = m.Node
	}
	return out
}
