package texttable

import (
	"strings"
	"testing"
	"time"
)

func TestTable(t *testing.T) {
	var b strings.Builder
	tb := New(&b)
	tb.Row("NODE", "SECONDS")
	tb.Row("n0", 1.5)
	tb.Row("node-long", 12)
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "       NODE  SECONDS\n         n0      1.5\n  node-long       12\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

func TestCells(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{OrDash(""), "-"}, {OrDash("x"), "x"},
		{Time(time.Time{}), "-"}, {Time(time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 3600))), "2026-01-02T02:04:05Z"},
		{Float(1.25, 1), "1.3"}, {Float(2, 2), "2.00"}, {Float(-0.04, 1), "-0.0"},
		{Plural(1, "node"), "1 node"}, {Plural(0, "node"), "0 nodes"}, {Plural(3, "etcd user"), "3 etcd users"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	var b strings.Builder
	if err := WriteCSV(&b, [][]string{{"a", "b,c"}, {"1", ""}}); err != nil || b.String() != "a,\"b,c\"\n1,\n" {
		t.Errorf("csv %q, %v", b.String(), err)
	}
}
