package routing

import (
	"fmt"
	"slices"
	"strings"

	"github.com/bootfabric/bootfabric/topology"
)

// Connected reports whether every healthy endpoint of the tables can reach every other over the
// graph's links, whatever the engine: when it can, pairs the engine left unreachable are the
// engine's doing, not the fabric's.
func Connected(g *topology.Graph, tb *Tables) bool {
	seen := make([]bool, g.NumVertices())
	var queue []topology.VertexID
	for d, v := range tb.Dests() {
		if tb.Healthy(d) {
			queue, seen[v] = append(queue, v), true
			break
		}
	}
	for i := 0; i < len(queue); i++ {
		v := queue[i]
		for _, l := range g.Links(v) {
			if w := g.Other(l, v); !seen[w] {
				seen[w] = true
				// Endpoints do not forward: reach them, but do not walk through them.
				if g.Kind(w) == topology.Switch {
					queue = append(queue, w)
				}
			}
		}
	}
	for d, v := range tb.Dests() {
		if tb.Healthy(d) && !seen[v] {
			return false
		}
	}
	return true
}

// MismatchCause explains pairs that an engine left unreachable on a connected fabric: the
// engine's restriction on this kind of fabric. Suggest names the engines that do route it.
func MismatchCause(fab *topology.Fabric, engine string, opt Options, unreachable int64, pairs []string) string {
	cause := fmt.Sprintf("%s leaves %d pairs unreachable (first: %s) though the fabric connects them", engine, unreachable, strings.Join(pairs, ", "))
	if _, fat2d := topology.Fat2DOf(fab.Graph); fat2d {
		cause += fmt.Sprintf(": %s routes up*/down* only (up to the top level, then down), and on a 2-D fat-tree a leaf in another row and column is reached only by going down and up again", engine)
	} else if engine == "updn" && len(opt.Roots) > 0 {
		cause += ": updn routes up*/down* only (up towards its roots, then down), and from the roots given some pairs would have to go up again after going down"
	} else if engine == "dmodc" || engine == "dmodk" || engine == "updn" {
		cause += fmt.Sprintf(": %s routes up*/down* only (up towards the top level, then down), which this fabric does not allow between every pair", engine)
	}
	return cause
}

// Suggestion is an engine that routes every pair of a fabric: updn with Roots when its default
// roots do not (nil: the engine's defaults).
type Suggestion struct {
	Engine       string
	Roots        []topology.VertexID
	DeadlockFree bool
}

// Suggest lists the engines that route every pair of fab, deadlock-free ones first, leaving out
// engine run as opt (the one that just failed). They are found by routing the fabric with each (a
// check without congestion is cheap next to a run), so the advice holds for any fabric, not only
// the known kinds. vtftr, the engine made for 2-D fat-trees, is tried first on those.
func Suggest(fab *topology.Fabric, engine string, opt Options) []Suggestion {
	var out []Suggestion
	for _, name := range enginesFor(fab) {
		if name == engine && (name != "updn" || len(opt.Roots) == 1) {
			continue
		}
		for _, roots := range engineTrials(fab, name, engine, opt) {
			eng, err := New(name, Options{Roots: roots})
			if err != nil {
				continue
			}
			tb, err := eng.Compute(fab.Graph)
			if err != nil {
				continue // the engine does not take this fabric
			}
			rep := Check(tb, CheckOptions{})
			if rep.Unreachable > 0 {
				continue
			}
			out = append(out, Suggestion{Engine: name, Roots: roots, DeadlockFree: rep.DeadlockFree})
			break
		}
	}
	// Deadlock-free engines first: those are the ones to use.
	slices.SortStableFunc(out, func(a, b Suggestion) int {
		switch {
		case a.DeadlockFree == b.DeadlockFree:
			return 0
		case a.DeadlockFree:
			return -1
		}
		return 1
	})
	return out
}

// enginesFor lists the engines in the order to suggest them for fab: vtftr first on 2-D fat-trees.
func enginesFor(fab *topology.Fabric) []string {
	engines := Engines()
	if _, fat2d := topology.Fat2DOf(fab.Graph); fat2d {
		engines = append([]string{"vtftr"}, slices.DeleteFunc(engines, func(n string) bool { return n == "vtftr" })...)
	}
	return engines
}

// engineTrials lists the roots to try engine name with: updn first with its default roots (nil;
// unless those just failed: it was run without roots) and then with one root, the first switch of
// the top level, since up*/down* from a single root reaches every pair of a connected fabric.
func engineTrials(fab *topology.Fabric, name, failed string, opt Options) [][]topology.VertexID {
	if name != "updn" {
		return [][]topology.VertexID{nil}
	}
	var trials [][]topology.VertexID
	if failed != "updn" || len(opt.Roots) > 0 {
		trials = append(trials, nil)
	}
	g := fab.Graph
	root, top := topology.VertexID(-1), -1
	for v := range topology.VertexID(g.NumVertices()) {
		if g.Kind(v) == topology.Switch && g.Level(v) > top {
			root, top = v, g.Level(v)
		}
	}
	if root >= 0 {
		trials = append(trials, []topology.VertexID{root})
	}
	return trials
}

// Advice is Suggest as command-line flags, to append to an engine's refusal: "; engines that
// route it: -e X, or -e Y --roots S", or "" when no engine does.
func Advice(fab *topology.Fabric, engine string, opt Options) string {
	suit := Suggest(fab, engine, opt)
	if len(suit) == 0 {
		return ""
	}
	labels := make([]string, len(suit))
	for i, su := range suit {
		labels[i] = "-e " + su.Engine
		if len(su.Roots) > 0 {
			labels[i] += " --roots " + fab.VertexName(su.Roots[0])
		}
		if !su.DeadlockFree {
			labels[i] += " (every pair, but not deadlock-free)"
		}
	}
	return "; engines that route it: " + strings.Join(labels, ", or ")
}
