package nodestate

import (
	"fmt"
	"io"
	"time"

	"github.com/bootfabric/bootfabric/internal/texttable"
)

// WriteText writes what a server says of the node, as bootctl node show prints it: state,
// last health, error and history, times in UTC.
func (st *NodeStatus) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nstate %s since %s, attempt %d\n", st.State, FormatTime(st.Since), st.Attempt)
	if st.Health != nil {
		fmt.Fprintf(w, "last health %s at %s", st.Health.Status, FormatTime(st.Health.At))
		if len(st.Health.Details) > 0 {
			fmt.Fprintf(w, ": %s", st.Health.Details)
		}
		fmt.Fprintln(w)
	}
	if st.Error != "" {
		fmt.Fprintf(w, "error: %s\n", st.Error)
	}
	if len(st.History) == 0 {
		return nil
	}
	fmt.Fprintln(w, "history:")
	t := texttable.New(w)
	for _, h := range st.History {
		t.Row(FormatTime(h.At), h.From, "->", h.To, h.Event, texttable.OrDash(h.Detail))
	}
	return t.Flush()
}

// FormatTime writes a time in UTC to the second ("-" for none): the same in every time zone.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}
