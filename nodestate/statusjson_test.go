package nodestate

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// randomStatus builds a node status with every field exercised, strings drawn from awkward
// characters (quotes, controls, HTML, invalid UTF-8, line separators).
func randomStatus(r *rand.Rand) NodeStatus {
	alphabet := []string{"a", "Z", "0", "-", " ", `"`, `\`, "<", ">", "&", "\n", "\t", "\b", "\f", "\x00", "\x1f", "é", "界", "\u2028", "\u2029", "\xff", "\xc3", "😀", "/"}
	str := func(maxLen int) string {
		s := ""
		for i := r.IntN(maxLen + 1); i > 0; i-- {
			s += alphabet[r.IntN(len(alphabet))]
		}
		return s
	}
	tm := func() time.Time {
		if r.IntN(8) == 0 {
			return time.Time{}
		}
		loc := time.UTC
		if r.IntN(3) == 0 {
			loc = time.FixedZone("x", (r.IntN(48)-24)*1800)
		}
		return time.Unix(r.Int64N(4e9), r.Int64N(1e9)*int64(r.IntN(2))).In(loc)
	}
	n := NodeStatus{
		Name: str(12), MAC: str(17), Position: str(10), Profile: str(8),
		State: State(r.IntN(int(numStates))), Since: tm(), Attempt: r.IntN(1000) - 10,
		LastEvent: Event(r.IntN(int(numEvents))), Error: str(20), Server: str(6),
	}
	if r.IntN(2) == 0 {
		n.IP = str(15)
	}
	if r.IntN(4) > 0 {
		n.LastSeen = tm()
	}
	if r.IntN(6) > 0 {
		n.Times = map[State]time.Time{}
		for s := range numStates {
			if r.IntN(2) == 0 {
				n.Times[s] = tm()
			}
		}
	}
	if r.IntN(3) == 0 {
		details := []string{``, `{"a": 1, "b" : [1, 2 ,"<x>"]}`, `"text & more"`, `  null `, "[\"\u2028\"]"}
		n.Health = &Health{Status: str(6), Details: json.RawMessage(details[r.IntN(len(details))]), At: tm()}
	}
	for i := r.IntN(historyLen + 1); i > 0; i-- {
		n.History = append(n.History, Transition{From: State(r.IntN(int(numStates))), To: State(r.IntN(int(numStates))), Event: Event(1 + r.IntN(int(numEvents)-1)), At: tm(), Detail: str(30)})
	}
	if r.IntN(3) == 0 {
		n.HistoryDropped = r.IntN(1000)
	}
	n.RebootRequested = r.IntN(4) == 0
	n.PoweredOff = r.IntN(4) == 0
	n.Reported = r.IntN(3) == 0
	for i := r.IntN(3); i > 0; i-- {
		n.Served = append(n.Served, TokenFile(str(7)))
	}
	return n
}

func TestStatusJSONMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 3000; i++ {
		n := randomStatus(r)
		want, err := json.Marshal(&n)
		if err != nil {
			t.Fatalf("case %d: encoding/json: %v", i, err)
		}
		got, err := AppendStatusJSON(nil, &n)
		if err != nil {
			t.Fatalf("case %d: AppendStatusJSON: %v", i, err)
		}
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Fatalf("case %d (-encoding/json +AppendStatusJSON):\n%s", i, diff)
		}
	}
}

func TestStatusJSONRefusesWhatEncodingJSONRefuses(t *testing.T) {
	cases := map[string]NodeStatus{
		"bad state":      {State: numStates},
		"bad times key":  {Times: map[State]time.Time{numStates + 1: {}}},
		"year 10000":     {Since: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"bad history":    {History: []Transition{{From: 200}}},
		"broken details": {Health: &Health{Status: "ok", Details: json.RawMessage(`{"a":`)}},
	}
	for name, n := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := json.Marshal(&n); err == nil {
				t.Fatal("encoding/json accepted it: the case tests nothing")
			}
			if _, err := AppendStatusJSON(nil, &n); err == nil {
				t.Fatal("AppendStatusJSON accepted it")
			}
		})
	}
}

func FuzzStatusJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", `"<&>"`, "\xff\xfe", "\u2028\u2029", "\x00\x7f", "日本"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendJSONString(nil, s); string(got) != string(want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func BenchmarkStatusJSON(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	n := randomStatus(r)
	for len(n.History) < historyLen {
		n.History = append(n.History, Transition{From: Bound, To: Discover, Event: EvDiscover, At: time.Now().UTC(), Detail: "dhcp discover: offered"})
	}
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			if _, err := json.Marshal(&n); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("append", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = AppendStatusJSON(buf[:0], &n); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestStatusJSONKnowsEveryField fails when NodeStatus, Health or Transition gain a field: then
// AppendStatusJSON and randomStatus must learn it, or records would be saved without it.
func TestStatusJSONKnowsEveryField(t *testing.T) {
	for _, c := range []struct {
		v    any
		want int
	}{{NodeStatus{}, 20}, {Health{}, 3}, {Transition{}, 5}} {
		if got := reflect.TypeOf(c.v).NumField(); got != c.want {
			t.Errorf("%T has %d fields, AppendStatusJSON writes %d: teach it (and randomStatus) the new ones", c.v, got, c.want)
		}
	}
}
