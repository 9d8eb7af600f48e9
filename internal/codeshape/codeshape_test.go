package codeshape

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRepository holds every non-test function in the module to the limits.
func TestRepository(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	funcs, err := Measure(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(funcs) < 500 {
		t.Fatalf("measured only %d functions below %s: the walk is broken", len(funcs), root)
	}
	for _, v := range Violations(funcs) {
		t.Error(v)
	}
}

func TestMeasure(t *testing.T) {
	dir := t.TempDir()
	src := `package p

func Small() int { return 1 }

// Branchy has complexity 4.
func Branchy(a, b bool) int {
	if a && b {
		return 1
	}
	for i := 0; i < 3; i++ {
	}
	return 0
}

type T struct{}

// Long is exempt.
//
//codeshape:exempt a table of cases reads best in one place
func (T) Long() {
` + strings.Repeat("\t_ = 0\n", 60) + `}

//codeshape:exempt short
func Bad() {
` + strings.Repeat("\t_ = 0\n", 60) + `}
`
	for name, body := range map[string]string{"p.go": src, "p_test.go": "package p\nfunc TestX() {}\n", "testdata/q.go": "package q\nfunc Q() {}\n"} {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Measure(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Func{
		{Package: "p", Name: "Small", File: "p.go", Line: 3, Lines: 1, Complexity: 1},
		{Package: "p", Name: "Branchy", File: "p.go", Line: 6, Lines: 8, Complexity: 4},
		{Package: "p", Name: "(T).Long", File: "p.go", Line: 20, Lines: 62, Complexity: 1, Exempt: "a table of cases reads best in one place"},
		{Package: "p", Name: "Bad", File: "p.go", Line: 84, Lines: 62, Complexity: 1, Exempt: "short"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Measure (-want +got):\n%s", diff)
	}
	v := Violations(got)
	if len(v) != 1 || !strings.Contains(v[0], "p.Bad") || !strings.Contains(v[0], "too short") {
		t.Fatalf("Violations = %q, want one naming p.Bad's short reason", v)
	}
	withTests, err := Measure(dir, Options{Tests: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(withTests) != len(want)+1 {
		t.Fatalf("with tests: %d functions, want %d", len(withTests), len(want)+1)
	}
}

func TestMeasureBadFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte("package p\nfunc {"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Measure(dir, Options{})
	if err == nil || !strings.Contains(err.Error(), "bad.go") {
		t.Fatalf("err = %v, want one naming bad.go", err)
	}
}
