package fleet

import (
	"errors"
	"testing"
)

func TestEtcdErrorOneLine(t *testing.T) {
	base := errors.New("dial a:1: refused\ndial b:2: refused")
	for _, tc := range []struct {
		eps  []string
		want string
	}{
		{[]string{"a:1", "b:2"}, "dial a:1: refused; dial b:2: refused"},
		{[]string{"a:1", "c:3"}, "etcd at a:1,c:3: dial a:1: refused; dial b:2: refused"},
		{nil, "dial a:1: refused; dial b:2: refused"},
	} {
		e := &EtcdError{Endpoints: tc.eps, Err: base}
		if got := e.Error(); got != tc.want {
			t.Errorf("%v: got %q, want %q", tc.eps, got, tc.want)
		}
		if !errors.Is(e, base) {
			t.Errorf("%v: does not unwrap to its cause", tc.eps)
		}
	}
}
