package nodestate

import (
	"encoding/json"
	"testing"
	"time"
)

// FuzzDecodeNode: a saved record decodes to a node named by its key in a known state, or is an
// error; a decoded record encodes and decodes to itself.
func FuzzDecodeNode(f *testing.F) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	good, _ := json.Marshal(NodeStatus{Name: "node00", MAC: "52:54:00:00:00:00", State: Healthy, Since: at,
		Times: map[State]time.Time{Discover: at}, History: []Transition{{From: Pending, To: Discover, Event: EvDiscover, At: at}},
		Health: &Health{Status: "ok", Details: json.RawMessage(`{"a":1}`), At: at}, HistoryDropped: 3, RebootRequested: true})
	f.Add([]byte("node00"), good)
	f.Add([]byte("node01"), good)
	f.Add([]byte("node00"), []byte(`{"name":"node00","state":"sleepy"}`))
	f.Add([]byte("node00"), []byte(`{"name":"node00","state":"healthy","last_event":"nope"}`))
	f.Add([]byte("node00"), []byte(`{"name":"node00","times":{"bogus":"2026-01-01T00:00:00Z"}}`))
	f.Add([]byte("version"), []byte("1"))
	f.Fuzz(func(t *testing.T, k, v []byte) {
		n, err := DecodeNode(k, v)
		if err != nil {
			return
		}
		if n.Name != string(k) || n.State >= numStates {
			t.Fatalf("%q: decoded %q in state %d", k, n.Name, n.State)
		}
		enc, err := json.Marshal(n)
		if err != nil {
			t.Fatalf("%q: re-encoding: %v", k, err)
		}
		m, err := DecodeNode(k, enc)
		if err != nil || m.Name != n.Name || m.State != n.State || m.Attempt != n.Attempt {
			t.Fatalf("%q: round trip: %v %+v", k, err, m)
		}
	})
}
