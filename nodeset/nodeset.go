// Package nodeset expands the node lists operators type: names with bracketed ranges, as
// ClusterShell and pdsh write them (node[001-128], s0-b[0-3]-n[0-7], n[1,3,5-7]), comma-separated
// lists of those, and @FILE for a list kept in a file. It knows nothing of any inventory: the
// caller checks that the names exist.
package nodeset

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// MaxNodes bounds how many names one expression may expand to, so that a typo such as
// n[0-99999999] is an error, not an allocation of gigabytes.
const MaxNodes = 1 << 20

// Expand returns the names an expression lists, in order, without duplicates (the first
// occurrence keeps its place). An expression is a comma-separated list of patterns and @FILE
// references; a pattern is a name with any number of bracketed sets, each a comma-separated list
// of numbers and ranges LO-HI. A range keeps the width of its low end's zero padding (node[01-10]
// gives node01 ... node10). A file holds expressions, one or more per line; '#' starts a comment.
func Expand(expr string) ([]string, error) {
	e := expander{seen: map[string]bool{}}
	if err := e.expr(expr, ""); err != nil {
		return nil, err
	}
	return e.out, nil
}

type expander struct {
	out   []string
	seen  map[string]bool
	depth int // @FILE nesting
}

// expr expands one expression; where names its origin ("" or "FILE:LINE: ") for errors.
func (e *expander) expr(expr, where string) error {
	parts, err := splitTop(expr)
	if err != nil {
		return fmt.Errorf("%s%q: %w", where, expr, err)
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
			continue
		case strings.HasPrefix(p, "@"):
			if err := e.file(p[1:]); err != nil {
				return err
			}
		default:
			names, err := pattern(p, MaxNodes-len(e.out))
			if err != nil {
				return fmt.Errorf("%s%q: %w", where, p, err)
			}
			for _, n := range names {
				if !e.seen[n] {
					e.seen[n] = true
					e.out = append(e.out, n)
				}
			}
		}
	}
	return nil
}

// file expands the expressions of a node list file.
func (e *expander) file(path string) error {
	if e.depth >= 8 {
		return fmt.Errorf("@%s: node list files nest more than 8 deep", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("@%s: %w", path, err)
	}
	defer f.Close()
	e.depth++
	defer func() { e.depth-- }()
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		for _, field := range strings.Fields(text) {
			if err := e.expr(field, fmt.Sprintf("%s:%d: ", path, line)); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("@%s: %w", path, err)
	}
	return nil
}

// splitTop splits at the commas outside brackets.
func splitTop(s string) ([]string, error) {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[':
			if depth++; depth > 1 {
				return nil, fmt.Errorf("'[' inside brackets at %d", i+1)
			}
		case ']':
			if depth--; depth < 0 {
				return nil, fmt.Errorf("']' without '[' at %d", i+1)
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("'[' without ']'")
	}
	return append(parts, s[start:]), nil
}

// pattern expands one name pattern into at most limit names.
func pattern(p string, limit int) ([]string, error) {
	names, err := expandPattern(p, limit)
	if err != nil {
		return nil, err
	}
	// Names differ only in the digits the brackets put in: checking one checks all.
	if err := validName(names[0]); err != nil {
		return nil, err
	}
	return names, nil
}

// expandPattern is pattern without the name check (a pattern's tail may be empty).
func expandPattern(p string, limit int) ([]string, error) {
	open := strings.IndexByte(p, '[')
	if open < 0 {
		return []string{p}, nil
	}
	end := strings.IndexByte(p[open:], ']') + open
	values, err := set(p[open+1 : end])
	if err != nil {
		return nil, err
	}
	rest, err := expandPattern(p[end+1:], limit)
	if err != nil {
		return nil, err
	}
	if len(values)*len(rest) > limit {
		return nil, fmt.Errorf("expands to more than %d names", MaxNodes)
	}
	out := make([]string, 0, len(values)*len(rest))
	for _, v := range values {
		for _, r := range rest {
			out = append(out, p[:open]+v+r)
		}
	}
	return out, nil
}

// set expands the inside of one pair of brackets: numbers and ranges, comma-separated.
func set(s string) ([]string, error) {
	if s == "" {
		return nil, fmt.Errorf("empty brackets")
	}
	var out []string
	for _, item := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(item, "-")
		if !isRange {
			hi = lo
		}
		a, err := number(lo)
		if err != nil {
			return nil, err
		}
		b, err := number(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("range %s runs backwards", item)
		}
		if b-a >= MaxNodes {
			return nil, fmt.Errorf("range %s: more than %d names", item, MaxNodes)
		}
		width := 0
		if len(lo) > 1 && lo[0] == '0' {
			width = len(lo) // zero padding, as ClusterShell keeps it
		}
		for v := a; v <= b; v++ {
			out = append(out, fmt.Sprintf("%0*d", width, v))
		}
	}
	return out, nil
}

// number parses a range's end: decimal digits only.
func number(s string) (int, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if len(s) > 9 {
		return 0, fmt.Errorf("%q: more than 9 digits", s)
	}
	return strconv.Atoi(s)
}

// validName refuses what no node name holds: spaces, control characters, '/', '@', brackets.
func validName(n string) error {
	if n == "" {
		return fmt.Errorf("empty name")
	}
	for _, r := range n {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("/@[],", r) {
			return fmt.Errorf("%q: %q is not allowed in a node name", n, r)
		}
	}
	return nil
}
