package texttable

import (
	"strings"
	"testing"
)

func TestTable(t *testing.T) {
	var b strings.Builder
	tb := New(&b)
	tb.Row("name", "nodes", "seconds")
	tb.Row("bcda", 128, Fixed(3.14159, 3))
	tb.Row("scda", 4, Fixed(12, 1))
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "  name  nodes  seconds\n  bcda    128    3.142\n  scda      4     12.0\n"
	if got := b.String(); got != want {
		t.Errorf("table:\n%q\nwant\n%q", got, want)
	}
}

func TestFixed(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		prec int
		want string
	}{{2.5, 3, "2.500"}, {0.0005, 3, "0.001"}, {1234.5, 0, "1235"}, {-1.25, 1, "-1.3"}, {0, 2, "0.00"}, {78.125, 2, "78.13"}} {
		if got := Fixed(tc.v, tc.prec); got != tc.want {
			t.Errorf("Fixed(%v, %d) = %q, want %q", tc.v, tc.prec, got, tc.want)
		}
	}
}
