package nodestate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestStatusText: state, health with its details, error and history, each time in UTC whatever
// the zone it was taken in; no history section without transitions.
func TestStatusText(t *testing.T) {
	at := time.Date(2026, 1, 2, 4, 5, 6, 0, time.FixedZone("X", 3600))
	full := &NodeStatus{State: Failed, Since: at, Attempt: 2, Error: "kernel: timeout",
		Health:  &Health{Status: "fail", Details: json.RawMessage(`{"disk":"bad"}`), At: at},
		History: []Transition{{From: Pending, To: Failed, Event: EvHealthFailed, At: at}}}
	for _, tc := range []struct {
		name string
		st   *NodeStatus
		want string
	}{
		{"bare", &NodeStatus{State: Pending}, "\nstate pending since -, attempt 0\n"},
		{"full", full, "\nstate failed since 2026-01-02T03:05:06Z, attempt 2\n" +
			`last health fail at 2026-01-02T03:05:06Z: {"disk":"bad"}` + "\nerror: kernel: timeout\nhistory:\n"},
	} {
		var b strings.Builder
		if err := tc.st.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.String(), tc.want) {
			t.Errorf("%s:\n%q\nwant it to start\n%q", tc.name, b.String(), tc.want)
		}
	}
}
