package topology

import (
	"bufio"
	"fmt"
	"io"
	"strings"
)

// WriteIBSimNet writes the fabric as an ibsim net file: a Switch or Hca block per vertex, named
// by its node description, with one line per linked port ("[p]	"remote"[q]") and the physical
// port numbers of f. ibsim gives the ports its own GUIDs (see ParseIBNetDiscover), so a spec's
// fabric is simulated with the spec's vertex names as node descriptions, the ports the spec's
// engines route, and the GUIDs and LIDs that ibsim and OpenSM assign: route the spec again with
// --lids from the simulated fabric's ibnetdiscover output to dump tables for it.
func WriteIBSimNet(w io.Writer, f *Fabric) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# ibsim net file of %s, written by bootctl route --net\n", f.Name)
	n := VertexID(f.NumVertices())
	seen := make(map[string]VertexID, n)
	for v := range n {
		d := f.Desc(v)
		if strings.ContainsAny(d, "\"#@\n") {
			return fmt.Errorf("ibsim net: %q: ibsim names cannot hold '\"', '#' or '@'", d)
		}
		if u, dup := seen[d]; dup {
			return fmt.Errorf("ibsim net: vertices %d and %d are both named %q", u, v, d)
		}
		seen[d] = v
	}
	// Switches first: ibsim attaches its clients (OpenSM, the diagnostics) to the first node.
	for _, sw := range []bool{true, false} {
		for v := range n {
			if (f.Kind(v) == Switch) != sw || len(f.Links(v)) == 0 {
				continue
			}
			ports := 0
			for _, l := range f.Links(v) {
				ports = max(ports, f.LinkPort(v, l))
			}
			kind := "Hca"
			if sw {
				kind = "Switch"
			}
			fmt.Fprintf(bw, "\n%s\t%d \"%s\"\n", kind, ports, f.Desc(v))
			for _, l := range f.Links(v) {
				u := f.Other(l, v)
				fmt.Fprintf(bw, "[%d]\t\"%s\"[%d]\n", f.LinkPort(v, l), f.Desc(u), f.LinkPort(u, l))
			}
		}
	}
	return bw.Flush()
}
