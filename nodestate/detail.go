package nodestate

import "strings"

// Detail is a node's one-line detail for a table: that the operator powered it off and that its
// reboot is armed, then its error, else its last transition's detail, cut to 60 characters; ""
// for none.
func (n *NodeStatus) Detail() string {
	detail := n.Error
	if detail == "" && len(n.History) > 0 {
		detail = n.History[len(n.History)-1].Detail
	}
	if n.PoweredOff && n.Error == "" {
		detail = "" // the power-off transition's own detail says no more than the mark
	}
	var marks []string
	if n.PoweredOff {
		marks = append(marks, "powered off")
	}
	if n.RebootRequested {
		marks = append(marks, "reboot armed")
	}
	if len(marks) > 0 {
		detail = strings.TrimSuffix(strings.Join(marks, ", ")+"; "+detail, "; ")
	}
	if len(detail) > 60 {
		detail = detail[:57] + "..."
	}
	return detail
}

// Marks are a node's power and reboot columns: "off" when the operator powered it off (the
// servers know no other power state), "armed" when its next DISCOVER starts a new attempt.
func (n *NodeStatus) Marks() (power, reboot string) {
	if n.PoweredOff {
		power = "off"
	}
	if n.RebootRequested {
		reboot = "armed"
	}
	return power, reboot
}
