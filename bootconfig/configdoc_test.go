package bootconfig

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var updateConfigDoc = flag.Bool("update-config-doc", false, "rewrite ../docs/config.md from the config types")

const configDocPath = "../docs/config.md"

// TestConfigDoc fails when docs/config.md is not what the doc comments of Config and the types it
// holds render to; `go test ./bootconfig -run TestConfigDoc -update-config-doc` rewrites it.
func TestConfigDoc(t *testing.T) {
	got, err := renderConfigDoc(".")
	if err != nil {
		t.Fatal(err)
	}
	if *updateConfigDoc {
		if err := os.WriteFile(configDocPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is out of date: run go test ./bootconfig -run TestConfigDoc -update-config-doc", configDocPath)
	}
}

// configTypes holds the package's struct types and their doc comments, parsed from its non-test files.
type configTypes struct {
	fset    *token.FileSet
	structs map[string]*ast.StructType
	docs    map[string]string
}

func parseConfigTypes(dir string) (*configTypes, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	ct := &configTypes{fset: fset, structs: map[string]*ast.StructType{}, docs: map[string]string{}}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				ts := s.(*ast.TypeSpec)
				if st, ok := ts.Type.(*ast.StructType); ok {
					ct.structs[ts.Name.Name] = st
					ct.docs[ts.Name.Name] = configDocLine(g.Doc.Text())
				}
			}
		}
	}
	return ct, nil
}

func renderConfigDoc(dir string) ([]byte, error) {
	ct, err := parseConfigTypes(dir)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("# Configuration reference\n\n")
	b.WriteString("<!-- Generated from the doc comments of bootconfig.Config (bootconfig/config.go) by\n")
	b.WriteString("     go test ./bootconfig -run TestConfigDoc -update-config-doc; do not edit by hand. -->\n\n")
	b.WriteString("The YAML file of `bootctl serve --config FILE`; a fleet's `fleet.yaml` is the same without the\n")
	b.WriteString("per-server settings ([fleet.md](fleet.md)). An example with comments is\n")
	b.WriteString("[examples/serve/bootsrv.yaml](../examples/serve/bootsrv.yaml).\n")
	ct.section(&b, "Config", "", "top level")
	return b.Bytes(), nil
}

// section writes one table for the struct type name, fields named under prefix, then a section for
// each struct-typed field. A field with no comment on the line after a commented one shares its comment.
func (ct *configTypes) section(b *bytes.Buffer, name, prefix, title string) {
	fmt.Fprintf(b, "\n## %s\n\n%s\n\n| field | type | meaning |\n|---|---|---|\n", title, ct.docs[name])
	var nested [][3]string
	shared, prevLine := "", 0
	for _, f := range ct.structs[name].Fields.List {
		line := ct.fset.Position(f.Pos()).Line
		adjacent := line == prevLine+1
		prevLine = ct.fset.Position(f.End()).Line
		key := configDocKey(f)
		if key == "" || len(f.Names) == 0 {
			continue
		}
		typ, inner := ct.typeName(f.Type)
		doc := configDocLine(f.Doc.Text())
		switch {
		case doc != "":
			shared = "`" + prefix + key + "`"
		case shared != "" && adjacent:
			doc = "as " + shared
		default:
			shared = ""
		}
		if inner != "" {
			sub := prefix + key
			if strings.HasPrefix(typ, "list") {
				sub += "[]"
			}
			nested = append(nested, [3]string{inner, sub + ".", sub})
			doc = strings.TrimSpace(doc + " See [" + sub + "](#" + configDocAnchor(sub) + ").")
		}
		fmt.Fprintf(b, "| `%s%s` | %s | %s |\n", prefix, key, typ, strings.ReplaceAll(doc, "|", `\|`))
	}
	for _, n := range nested {
		ct.section(b, n[0], n[1], n[2])
	}
}

// typeName names a field's type in YAML's words, and the package struct it holds, if any.
func (ct *configTypes) typeName(e ast.Expr) (string, string) {
	switch x := e.(type) {
	case *ast.StarExpr:
		return ct.typeName(x.X)
	case *ast.ArrayType:
		s, inner := ct.typeName(x.Elt)
		return "list of " + s, inner
	case *ast.Ident:
		if _, ok := ct.structs[x.Name]; ok {
			return "mapping", x.Name
		}
		if x.Name == "Duration" {
			return "duration", ""
		}
		return x.Name, ""
	case *ast.SelectorExpr: // a named string type of another package (dhcpd.Mode)
		return "string", ""
	}
	return fmt.Sprintf("%T", e), ""
}

func configDocKey(f *ast.Field) string {
	if f.Tag == nil {
		return ""
	}
	tag := reflect.StructTag(strings.Trim(f.Tag.Value, "`")).Get("yaml")
	key, _, _ := strings.Cut(tag, ",")
	if key == "-" {
		return ""
	}
	return key
}

func configDocAnchor(s string) string {
	return strings.NewReplacer(".", "", "[]", "").Replace(s)
}

func configDocLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
