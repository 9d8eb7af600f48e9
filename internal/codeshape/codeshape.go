// Package codeshape measures the shape of the project's own functions: their length in lines and
// their cyclomatic complexity (as gocyclo counts it), so that a test can hold every function to a
// size a reader can keep in mind at once.
//
// The limits are MaxLines and MaxComplexity. A function may exceed them only when its doc comment
// carries a directive saying why:
//
//	//codeshape:exempt one case per DHCP option keeps the wire layout in one place
//
// A directive without a reason of at least MinReason characters does not count.
package codeshape

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/fzipp/gocyclo"
)

// Limits every function must keep unless it is exempt.
const (
	MaxLines      = 60
	MaxComplexity = 15
	// MinReason is the shortest reason an exemption may give.
	MinReason = 20
)

const directive = "//codeshape:exempt"

// Func is one function or method as measured.
type Func struct {
	// Package is the package name, Name the function ("(T).M" for a method), as gocyclo names them.
	Package, Name string
	// File is the path relative to the measured root, Line the line of the func keyword.
	File string
	Line int
	// Lines counts the lines from the func keyword to the closing brace.
	Lines      int
	Complexity int
	// Exempt is the reason given by a codeshape:exempt directive, or "".
	Exempt string
}

// Over reports whether f exceeds a limit.
func (f Func) Over() bool { return f.Lines > MaxLines || f.Complexity > MaxComplexity }

// Key names f as "package.Name", the way the closing notes list functions.
func (f Func) Key() string { return f.Package + "." + f.Name }

// Options choose what Measure reads.
type Options struct {
	// Tests includes _test.go files.
	Tests bool
}

// Measure parses every Go file below root (skipping testdata, vendor and hidden or underscore
// directories, as the go tool does) and returns its functions sorted by file and line.
func Measure(root string, opt Options) ([]Func, error) {
	var out []Func
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || (!opt.Tests && strings.HasSuffix(path, "_test.go")) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		funcs, err := measureFile(path, filepath.ToSlash(rel))
		out = append(out, funcs...)
		return err
	})
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, err
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")
}

func measureFile(path, rel string) ([]Func, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
	if err != nil {
		return nil, fmt.Errorf("codeshape: %w", err)
	}
	// gocyclo names functions; measuring the file through it keeps the names identical to its CLI.
	stats := gocyclo.AnalyzeASTFile(f, fset, nil)
	names := make(map[int]string, len(stats))
	for _, s := range stats {
		names[s.Pos.Line] = s.FuncName
	}
	var out []Func
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok {
			continue
		}
		start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
		name := names[start.Line]
		if name == "" {
			name = fn.Name.Name // gocyclo skips functions with a gocyclo:ignore directive
		}
		out = append(out, Func{
			Package:    f.Name.Name,
			Name:       name,
			File:       rel,
			Line:       start.Line,
			Lines:      end.Line - start.Line + 1,
			Complexity: gocyclo.Complexity(fn),
			Exempt:     exemptReason(fn.Doc),
		})
	}
	return out, nil
}

// exemptReason returns the reason of a codeshape:exempt directive in doc, or "".
func exemptReason(doc *ast.CommentGroup) string {
	if doc == nil {
		return ""
	}
	for _, c := range doc.List {
		if rest, ok := strings.CutPrefix(c.Text, directive); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// Violations returns the functions over a limit without a sufficient exemption, each as one line
// naming the file, the function and its figures.
func Violations(funcs []Func) []string {
	var out []string
	for _, f := range funcs {
		if !f.Over() {
			continue
		}
		switch {
		case f.Exempt == "":
			out = append(out, fmt.Sprintf("%s:%d: %s: %d lines, complexity %d (limits %d, %d): split it or add %s REASON",
				f.File, f.Line, f.Key(), f.Lines, f.Complexity, MaxLines, MaxComplexity, directive))
		case len(f.Exempt) < MinReason:
			out = append(out, fmt.Sprintf("%s:%d: %s: exemption reason %q is too short to say why", f.File, f.Line, f.Key(), f.Exempt))
		}
	}
	return out
}
