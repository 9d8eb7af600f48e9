package topology

import "fmt"

// makeTree records parent links and depths when the graph is a connected tree, rooted at the
// switch of the highest level (the first one found), or vertex 0 when there is no switch.
func (g *Graph) makeTree() {
	n := len(g.kinds)
	root, best := VertexID(0), -2
	for v := 0; v < n; v++ {
		if int(g.levels[v]) > best {
			root, best = VertexID(v), int(g.levels[v])
		}
	}
	up := make([]LinkID, n)
	depth := make([]int32, n)
	for i := range up {
		up[i] = -2 // unvisited
	}
	up[root] = -1
	queue := make([]VertexID, 0, n)
	queue = append(queue, root)
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		for _, l := range g.Links(v) {
			w := g.Other(l, v)
			if up[w] != -2 {
				continue
			}
			up[w] = l
			depth[w] = depth[v] + 1
			queue = append(queue, w)
		}
	}
	if len(queue) != n {
		return // not connected, so not a tree
	}
	g.up, g.depth = up, depth
}

// IsTree reports whether the graph is a connected tree, so that TreeRouter can route it.
func (g *Graph) IsTree() bool { return g.up != nil }

// Parent returns the parent of v in a tree and the link to it; ok is false at the root or when the
// graph is not a tree.
func (g *Graph) Parent(v VertexID) (parent VertexID, link LinkID, ok bool) {
	if g.up == nil || g.up[v] < 0 {
		return 0, 0, false
	}
	l := g.up[v]
	return g.Other(l, v), l, true
}

// TreeRouter routes a tree along its unique paths. It returns nil when the graph is not a tree.
func (g *Graph) TreeRouter() Router {
	if g.up == nil {
		return nil
	}
	return treeRouter{g}
}

type treeRouter struct{ g *Graph }

// Route climbs from both ends to their lowest common ancestor.
func (t treeRouter) Route(buf []Channel, src, dst VertexID) ([]Channel, error) {
	g := t.g
	if src < 0 || int(src) >= len(g.kinds) || dst < 0 || int(dst) >= len(g.kinds) {
		return buf, fmt.Errorf("route %d->%d: vertex out of range", src, dst)
	}
	var down [64]Channel // the dst side, collected bottom-up; trees here are shallow
	nd := 0
	a, b := src, dst
	for a != b {
		if g.depth[a] >= g.depth[b] {
			l := g.up[a]
			// Going up from the child: A is the child, so the A->B direction.
			buf = append(buf, ChannelOf(l, g.links[l].A != a))
			a = g.Other(l, a)
		} else {
			l := g.up[b]
			if nd == len(down) {
				return buf, fmt.Errorf("route %s->%s: tree deeper than %d", g.VertexName(src), g.VertexName(dst), len(down))
			}
			down[nd] = ChannelOf(l, g.links[l].B != b)
			nd++
			b = g.Other(l, b)
		}
	}
	for i := nd - 1; i >= 0; i-- {
		buf = append(buf, down[i])
	}
	return buf, nil
}
