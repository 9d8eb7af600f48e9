package images

import (
	"strings"
	"testing"
)

// TestLargest: the batch's largest profile by kernel + initrd (a boot file does not count), the
// number of distinct profiles, and a missing profile named with a node that boots it.
func TestLargest(t *testing.T) {
	st := newTestStore(t) // default: kernel + initrd, 20 bytes; rescue: the kernel, 10
	for _, tc := range []struct {
		nodes, profiles []string
		best            string
		bytes           float64
		count           int
		err             string
	}{
		{[]string{"n0", "n1"}, []string{"rescue", "rescue"}, "rescue", 10, 1, ""},
		{[]string{"n0", "n1", "n2"}, []string{"rescue", "default", "rescue"}, "default", 20, 2, ""},
		{[]string{"n0", "n1"}, []string{"default", "gone"}, "", 0, 0, `node n1: profile "gone"`},
		{nil, nil, "", 0, 0, "no profile"},
	} {
		best, bytes, count, err := st.Largest(tc.nodes, tc.profiles)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: err %v, want %q", tc.profiles, err, tc.err)
			}
			continue
		}
		if err != nil || best != tc.best || bytes != tc.bytes || count != tc.count {
			t.Errorf("%v: %s %v %d %v, want %s %v %d", tc.profiles, best, bytes, count, err, tc.best, tc.bytes, tc.count)
		}
	}
}
