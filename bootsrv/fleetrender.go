package bootsrv

import (
	"fmt"
	"io"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// WriteTable writes what `fleet apply` did with the revision, what the live servers made of it,
// and its servers and profiles.
func (r *FleetApplyResult) WriteTable(w io.Writer) error {
	switch {
	case r.DryRun:
		fmt.Fprintf(w, "fleet %s: dry run, nothing written; sha256 %s (%d bytes)\n", r.Fleet, r.SHA256, r.Bytes)
	case r.Changed:
		fmt.Fprintf(w, "fleet %s: configuration %d applied (etcd revision %d), signed by key %s; sha256 %s (%d bytes)\n", r.Fleet, r.Number, r.Revision, r.Key, r.SHA256, r.Bytes)
	default:
		fmt.Fprintf(w, "fleet %s: configuration %d unchanged (the same is stored, etcd revision %d); sha256 %s\n", r.Fleet, r.Number, r.Revision, r.SHA256)
	}
	if !r.DryRun {
		fmt.Fprintln(w, DescribeVerdicts(r.Applied))
	}
	fmt.Fprintf(w, "%s, %s (%s), %s\n\n", texttable.Plural(len(r.Servers), "server"), texttable.Plural(r.Nodes, "node"), r.Mapping, texttable.Plural(len(r.Profiles), "profile"))
	t := texttable.New(w)
	t.Row("SERVER", "ADDRESS", "NODES", "")
	for _, s := range r.Servers {
		note := ""
		if s.Failed {
			note = "failed_servers"
		}
		t.Row(s.Name, s.Address, s.Nodes, note)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	t = texttable.New(w)
	t.Row("PROFILE", "FILES", "BYTES")
	for _, p := range r.Profiles {
		t.Row(p.Name, p.Files, p.Bytes)
	}
	return t.Flush()
}

// WriteTable writes the fleet's revision, its servers (liveness, lease, the nodes each owns and
// holds) and its latest takeovers.
func (st *FleetStatus) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "fleet %s: configuration %d (etcd revision %d), sha256 %s; %d nodes (%s), %d of %d servers live\n",
		st.Fleet, st.Number, st.Revision, st.SHA256[:min(12, len(st.SHA256))], st.Nodes, st.Mapping, st.Live, len(st.Servers))
	if st.Unowned > 0 {
		fmt.Fprintf(w, "no live server owns %d of the %d nodes: nobody answers them until a server joins\n", st.Unowned, st.Nodes)
	}
	fmt.Fprintln(w)
	t := texttable.New(w)
	t.Row("SERVER", "ADDRESS", "STATE", "NODES", "HOLDS", "URL", "JOINED", "LAST SEEN", "LEASE")
	for _, s := range st.Servers {
		lease := "-"
		if s.LeaseTTL > 0 {
			lease = fmt.Sprintf("renewed %gs ago, %gs left of %gs", s.LeaseTTL-s.LeaseLeft, s.LeaseLeft, s.LeaseTTL)
		}
		t.Row(s.Name, s.Address, s.State, s.Nodes, s.Holds, texttable.OrDash(s.URL), texttable.Time(s.JoinedAt), texttable.Time(s.LastSeen), lease)
	}
	if err := t.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntakeovers: %d\n", st.Takeovers)
	if len(st.Recent) == 0 {
		return nil
	}
	t = texttable.New(w)
	t.Row("SEQ", "AT", "FROM", "TO", "NODES", "MID-BOOT")
	for _, tk := range st.Recent {
		t.Row(tk.Seq, texttable.Time(tk.At), tk.From, tk.To, tk.Nodes, tk.MidBoot)
	}
	return t.Flush()
}
