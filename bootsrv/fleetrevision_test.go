package bootsrv

import (
	"testing"

	"github.com/bootfabric/bootfabric/fleet"
)

func TestVerdictOf(t *testing.T) {
	rev := fleet.ConfigRevision{Revision: 10, Serial: 5, SHA256: "aa"}
	same := &RevisionInfo{Revision: 10, Serial: 5, SHA256: "aa"}
	for _, tc := range []struct {
		name  string
		m     MemberRevisions
		want  ServerVerdict
		final bool
	}{
		{"runs it", MemberRevisions{Name: "a", Running: same}, ServerVerdict{Name: "a", State: VerdictApplied}, true},
		{"refused", MemberRevisions{Name: "a", Checked: &RevisionInfo{Revision: 10, Serial: 5, SHA256: "aa", Refused: "bad key"}},
			ServerVerdict{Name: "a", State: VerdictRefused, Refused: "bad key"}, true},
		{"accepted", MemberRevisions{Name: "a", Checked: same}, ServerVerdict{Name: "a", State: VerdictAccepted}, false},
		{"newer checked", MemberRevisions{Name: "a", Checked: &RevisionInfo{Revision: 11, Serial: 6}}, ServerVerdict{Name: "a", State: VerdictSuperseded}, true},
		{"old bootctl", MemberRevisions{Name: "a"}, ServerVerdict{Name: "a", State: VerdictUnknown}, true},
		{"silent", MemberRevisions{Name: "a", Running: &RevisionInfo{Revision: 9, Serial: 4}}, ServerVerdict{Name: "a", State: VerdictSilent}, false},
	} {
		got, final := verdictOf(tc.m, rev)
		if got != tc.want || final != tc.final {
			t.Errorf("%s: got %+v final %v, want %+v final %v", tc.name, got, final, tc.want, tc.final)
		}
	}
}

func TestVerdictLines(t *testing.T) {
	vs := []ServerVerdict{{Name: "a", State: VerdictApplied}, {Name: "b", State: VerdictRefused, Refused: "rollback"}, {Name: "c", State: VerdictApplied}}
	for _, tc := range []struct {
		vs         []ServerVerdict
		line, fail string
	}{
		{nil, "no live server to apply it yet", ""},
		{vs, "servers: applied by a, c; refused by b",
			"fleet f: configuration 2 (etcd revision 7) is in etcd, but refused by b (rollback): those servers keep what they run"},
	} {
		if got := DescribeVerdicts(tc.vs); got != tc.line {
			t.Errorf("DescribeVerdicts(%v) = %q, want %q", tc.vs, got, tc.line)
		}
		err := RefusedError("f", 2, 7, tc.vs)
		if (err == nil) != (tc.fail == "") || err != nil && err.Error() != tc.fail {
			t.Errorf("RefusedError(%v) = %v, want %q", tc.vs, err, tc.fail)
		}
	}
}

func TestAfterSerial(t *testing.T) {
	for _, tc := range []struct {
		ms   []MemberRevisions
		want uint64
	}{
		{nil, 0},
		{[]MemberRevisions{{Name: "a"}}, 0},
		{[]MemberRevisions{{Name: "a", Running: &RevisionInfo{Serial: 3}}, {Name: "b", Running: &RevisionInfo{Serial: 9}}, {Name: "c"}}, 9},
	} {
		if got := AfterSerial(tc.ms); got != tc.want {
			t.Errorf("AfterSerial(%v) = %d, want %d", tc.ms, got, tc.want)
		}
	}
}
