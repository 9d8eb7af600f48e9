// Package yamlerr decodes YAML files strictly and says what is wrong with them in the words of the
// file's author: the line, the field path as written in the file, and what the field wants, never
// a Go type ("line 3: levels[0].uplink.capacity_mbps: \"1Gb\" is not a number", "line 5:
// levels[1].uplink: unknown field \"latencyus\" (did you mean latency_us?)").
package yamlerr

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/bootfabric/bootfabric/internal/suggest"
	"gopkg.in/yaml.v3"
)

// Error is one problem in a YAML document.
type Error struct {
	Line  int    // 1-based; 0 when unknown
	Field string // path of the field as written, e.g. levels[2].uplink.capacity_mbps; may be empty
	Msg   string
}

func (e *Error) Error() string {
	var sb strings.Builder
	if e.Line > 0 {
		sb.WriteString("line " + strconv.Itoa(e.Line) + ": ")
	}
	if e.Field != "" {
		sb.WriteString(e.Field + ": ")
	}
	sb.WriteString(e.Msg)
	return sb.String()
}

// ValueError is what a yaml.Unmarshaler of the caller's returns for a scalar it cannot take. yaml.v3
// passes such an error through untouched, so without it the message would carry no field and
// would read as a syntax error; with it Explain names the field and the line as it does for the
// built-in types ("lease: \"1w\" is not a duration like 200ms, 1h or 7d").
type ValueError struct {
	Node *yaml.Node // the value refused
	Want string     // what the field wants, after "is not": "a duration like 200ms, 1h or 7d"
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("line %d: %q is not %s", e.Node.Line, e.Node.Value, e.Want)
}

// ErrEmpty is returned by Decode for a document with no content.
var ErrEmpty = errors.New("empty document")

// Decode decodes data into v, refusing fields v does not have, and returns the document's root node
// (to locate later errors with Line). Errors are *Error, or ErrEmpty.
func Decode(data []byte, v any) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, Explain(err, nil, v)
	}
	if len(root.Content) == 0 {
		return nil, ErrEmpty
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ErrEmpty
		}
		return nil, Explain(err, &root, v)
	}
	return root.Content[0], nil
}

var (
	lineRE    = regexp.MustCompile(`^line (\d+): (.*)$`)
	scalarRE  = regexp.MustCompile("^cannot unmarshal !!(\\w+) `(.*)` into (.+)$")
	nodeRE    = regexp.MustCompile(`^cannot unmarshal !!(\w+) into (.+)$`)
	unknownRE = regexp.MustCompile(`^field (\S+) not found in type (.+)$`)
	alreadyRE = regexp.MustCompile(`^field (\S+) already set in type (.+)$`)
)

// kindOfNode names what a YAML tag holds.
func kindOfNode(tag string) string {
	switch tag {
	case "seq":
		return "a list"
	case "map":
		return "a mapping"
	case "str":
		return "text"
	case "int", "float":
		return "a number"
	case "bool":
		return "true or false"
	case "null":
		return "nothing"
	}
	return tag
}

// Explain rewrites an error of yaml.v3 (syntax or decoding into v) as an *Error in the file's
// words; root, the document parsed as a node tree, lets it name the field (nil: line only). Only
// the first of several decoding errors is kept.
func Explain(err error, root *yaml.Node, v any) error {
	if err == nil {
		return nil
	}
	doc := root
	if doc != nil && doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		doc = doc.Content[0]
	}
	if ve, ok := errors.AsType[*ValueError](err); ok {
		return explainValue(ve, doc)
	}
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		return explainSyntax(err)
	}
	m := lineRE.FindStringSubmatch(te.Errors[0])
	if m == nil {
		return &Error{Msg: te.Errors[0]}
	}
	line, _ := strconv.Atoi(m[1])
	what := m[2]
	if s := unknownRE.FindStringSubmatch(what); s != nil {
		return explainUnknown(line, s[1], s[2], doc, v)
	}
	if s := alreadyRE.FindStringSubmatch(what); s != nil {
		return &Error{Line: line, Msg: fmt.Sprintf("field %q appears twice", s[1])}
	}
	return explainMismatch(line, what, doc)
}

// explainValue names the field whose value a ValueError refused.
func explainValue(ve *ValueError, doc *yaml.Node) error {
	field := ""
	if doc != nil {
		_, field = locate(doc, "", func(_, val *yaml.Node) bool {
			return val.Line == ve.Node.Line && val.Kind == ve.Node.Kind && val.Value == ve.Node.Value
		})
	}
	return &Error{Line: ve.Node.Line, Field: field, Msg: fmt.Sprintf("%q is not %s", ve.Node.Value, ve.Want)}
}

// explainSyntax rewrites a YAML syntax error.
func explainSyntax(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if m := lineRE.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &Error{Line: line, Msg: "invalid YAML: " + m[2]}
	}
	return &Error{Msg: "invalid YAML: " + msg}
}

// explainUnknown rewrites "field NAME not found in type T", suggesting the nearest field of T or
// listing T's fields.
func explainUnknown(line int, name, goType string, doc *yaml.Node, v any) error {
	parent := ""
	if doc != nil {
		parent, _ = locate(doc, "", func(k, _ *yaml.Node) bool { return k.Line == line && k.Value == name })
	}
	out := fmt.Sprintf("unknown field %q", name)
	names := fieldNames(reflect.TypeOf(v), goType)
	if near := nearest(name, names); near != "" {
		out += fmt.Sprintf(" (did you mean %s?)", near)
	} else if len(names) > 0 {
		out += fmt.Sprintf(" (fields here: %s)", strings.Join(names, ", "))
	}
	return &Error{Line: line, Field: parent, Msg: out}
}

// explainMismatch rewrites "cannot unmarshal !!TAG `VALUE` into TYPE" (VALUE absent for lists and
// mappings) as what the field wants.
func explainMismatch(line int, what string, doc *yaml.Node) error {
	var tag, value, into string
	if s := scalarRE.FindStringSubmatch(what); s != nil {
		tag, value, into = s[1], s[2], s[3]
	} else if s := nodeRE.FindStringSubmatch(what); s != nil {
		tag, into = s[1], s[2]
	} else {
		return &Error{Line: line, Msg: what}
	}
	field := ""
	if doc != nil {
		kind := map[string]yaml.Kind{"seq": yaml.SequenceNode, "map": yaml.MappingNode}[tag]
		if kind == 0 {
			kind = yaml.ScalarNode
		}
		_, field = locate(doc, "", func(k, val *yaml.Node) bool {
			return val.Line == line && val.Kind == kind && (value == "" || val.Value == value)
		})
	}
	want := describe(into)
	if value != "" && tag != "seq" && tag != "map" {
		return &Error{Line: line, Field: field, Msg: fmt.Sprintf("%q is not %s", value, want)}
	}
	return &Error{Line: line, Field: field, Msg: fmt.Sprintf("want %s, not %s", want, kindOfNode(tag))}
}

// describe names what a Go type holds in YAML terms.
func describe(goType string) string {
	switch {
	case goType == "time.Duration":
		return "a duration (e.g. 300ms, 2s)"
	case strings.HasPrefix(goType, "float"):
		return "a number"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "uint"):
		return "a whole number"
	case goType == "bool":
		return "true or false"
	case goType == "string":
		return "text"
	case strings.HasPrefix(goType, "[]"):
		return "a list"
	default: // maps and structs
		return "a mapping (name: value lines)"
	}
}

// locate walks the mapping pairs under n and returns, for the first pair that matches (the deepest
// of nested ones), the path of its mapping and of the pair itself ("levels[1].uplink",
// "levels[1].uplink.latency_us").
func locate(n *yaml.Node, path string, match func(k, v *yaml.Node) bool) (parent, field string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := k.Value
			if path != "" {
				p = path + "." + k.Value
			}
			if pp, f := locate(v, p, match); f != "" {
				return pp, f
			}
			if match(k, v) {
				return path, p
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if pp, f := locate(c, fmt.Sprintf("%s[%d]", path, i), match); f != "" {
				return pp, f
			}
		}
	}
	return "", ""
}

// fieldNames returns the YAML names of the fields of the struct type called name ("pkg.Type") that
// t is or contains.
func fieldNames(t reflect.Type, name string) []string {
	st := findStruct(t, name, map[reflect.Type]bool{})
	if st == nil {
		return nil
	}
	var names []string
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch tag {
		case "-":
			continue
		case "":
			tag = strings.ToLower(f.Name)
		}
		names = append(names, tag)
	}
	return names
}

// findStruct returns the struct type called name that t is or contains (through pointers, slices,
// arrays, maps and fields), or nil; seen keeps recursive types from looping.
func findStruct(t reflect.Type, name string, seen map[reflect.Type]bool) reflect.Type {
	for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
		t = t.Elem()
	}
	if t == nil || t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	if t.String() == name {
		return t
	}
	for i := range t.NumField() {
		if found := findStruct(t.Field(i).Type, name, seen); found != nil {
			return found
		}
	}
	return nil
}

// nearest returns the name closest to s if it is close enough to be a typo: the same letters
// without case, "_" and "-", or within a few edits.
func nearest(s string, names []string) string {
	norm := func(x string) string { return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(x)) }
	best, bestD := "", -1
	for _, n := range names {
		if norm(n) == norm(s) {
			return n
		}
		if d := suggest.Distance(s, n); bestD < 0 || d < bestD {
			best, bestD = n, d
		}
	}
	if bestD >= 0 && bestD <= max(1, min(len(s), len(best))/3) {
		return best
	}
	return ""
}
