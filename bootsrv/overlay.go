package bootsrv

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/bootfabric/bootfabric/bootconfig"
	"github.com/bootfabric/bootfabric/images"
	"github.com/bootfabric/bootfabric/nodeset"
	"github.com/bootfabric/bootfabric/nodestate"
	"go.uber.org/zap"
)

// overlayFile is the name of every node's overlay initrd in its URL; iPXE names the image after
// it, and the kernel line's initrd= refers to it.
const overlayFile = "overlay.cpio.gz"

// nodeOverlay is a loaded overlay and the nodes it is for.
type nodeOverlay struct {
	ov       *images.Overlay
	nodes    map[string]bool // nil: every node
	profiles []string        // empty: any profile
}

// loadOverlays reads every overlay directory and checks that its node names are in the
// inventory, so that a typo is an error at start, not a node silently without its files.
func (s *Server) loadOverlays() error {
	inv := s.auth.Inventory()
	for i, oc := range s.cfg.Overlays {
		ov, err := images.LoadOverlay(oc.Dir)
		if err != nil {
			return fmt.Errorf("%s: overlays[%d].dir: %w", s.cfg.File(), i, err)
		}
		no := nodeOverlay{ov: ov, profiles: oc.Profiles}
		if oc.Nodes != "" {
			names, err := nodeset.Expand(oc.Nodes)
			if err != nil {
				return fmt.Errorf("%s: overlays[%d].nodes: %w", s.cfg.File(), i, err)
			}
			no.nodes = map[string]bool{}
			for _, n := range names {
				if _, ok := inv.ByName(n); !ok {
					return fmt.Errorf("%s: overlays[%d].nodes: %s is not in the inventory %s", s.cfg.File(), i, n, inv.File)
				}
				no.nodes[n] = true
			}
		}
		s.overlays = append(s.overlays, no)
	}
	return nil
}

// overlaysFor returns the overlays of a node booting profile, in configuration order.
func (s *Server) overlaysFor(name, profile string) []*images.Overlay {
	var out []*images.Overlay
	for _, o := range s.overlays {
		if (o.nodes == nil || o.nodes[name]) && (len(o.profiles) == 0 || slices.Contains(o.profiles, profile)) {
			out = append(out, o.ov)
		}
	}
	return out
}

// overlayURL is where the node fetches its overlay initrd, or "" when it has none.
func (s *Server) overlayURL(name, profile, token string) string {
	if len(s.overlaysFor(name, profile)) == 0 {
		return ""
	}
	u := s.baseURL + "/overlay/" + name + "/" + overlayFile
	if token != "" {
		u += "?token=" + token
	}
	return u
}

// handleOverlay renders a node's overlays. Overlays may hold keys, so the request must come as
// the node's own (its address and, with node_auth, its token), as the iPXE script must.
func (s *Server) handleOverlay(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("node")
	st, ok := s.tracker.Node(name)
	n, inInv := s.auth.Inventory().ByName(name)
	if !ok || !inInv {
		http.NotFound(w, r)
		return
	}
	if err := CheckNode(name, s.nodeCheck(r, name, st)); err != nil {
		s.reqLog(r, name).Info("overlay refused", zap.Error(err))
		refuse(w, err)
		return
	}
	overlays := s.overlaysFor(name, st.Profile)
	if len(overlays) == 0 {
		http.NotFound(w, r)
		return
	}
	if !s.claimOnce(w, r, name, st, nodestate.OverlayFile) {
		return
	}
	var buf bytes.Buffer
	if err := images.RenderOverlays(&buf, overlayNode(n, st), overlays...); err != nil {
		s.reqLog(r, name).Error("rendering the overlay", zap.Error(err))
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, overlayFile, time.Time{}, bytes.NewReader(buf.Bytes()))
}

// overlayNode is what the templates see of a node.
func overlayNode(n *bootconfig.InventoryNode, st nodestate.NodeStatus) images.OverlayNode {
	o := images.OverlayNode{Name: n.Name, MAC: n.MAC.String(), Position: n.Position, Index: n.Index, Profile: st.Profile, IP: st.IP}
	if n.IP.IsValid() {
		o.IP = n.IP.String()
	}
	return o
}
