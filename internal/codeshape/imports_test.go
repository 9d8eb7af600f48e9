package codeshape

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/bootfabric/bootfabric/"

// allowedImports is the design's layering (docs/packages.md): what each package may import of the
// module, outside its tests. The algorithm packages never import a server; the servers never the
// simulator; nothing imports the command.
var allowedImports = map[string][]string{
	"units": nil, "nodeset": nil, "power": {"internal/texttable"},
	"images":              {"internal/atomicfile", "internal/texttable"},
	"topology":            {"internal/yamlerr", "internal/texttable"},
	"mapping":             {"topology"},
	"routing":             {"topology", "internal/heapq", "internal/texttable"},
	"fabricsim":           {"topology", "mapping", "routing", "units", "internal/heapq"},
	"report":              {"fabricsim", "mapping", "topology", "units", "internal/yamlerr", "internal/atomicfile"},
	"fabricsim/simrun":    {"fabricsim", "mapping", "routing", "topology", "units", "internal/texttable"},
	"dhcpd":               {"internal/promreg"},
	"tftpd":               {"internal/promreg"},
	"fleet":               {"internal/promreg", "internal/atomicfile", "internal/texttable"},
	"images/ociimport":    {"images"},
	"delivery":            {"units"},
	"delivery/fetchcli":   {"delivery", "units", "internal/cligrammar"},
	"nodestate":           {"internal/promreg", "internal/texttable"},
	"nodestate/boltstore": {"nodestate"},
	"nodestate/etcdstore": {"nodestate", "fleet"},
	"bootapi":             {"nodestate", "internal/texttable"},
	"bootconfig":          {"dhcpd", "images", "mapping", "topology", "nodeset", "internal/yamlerr", "internal/atomicfile"},
	"bootsrv":             {"bootapi", "bootconfig", "nodestate", "nodestate/boltstore", "nodestate/etcdstore", "dhcpd", "tftpd", "images", "fleet", "mapping", "topology", "nodeset", "internal/promreg", "internal/texttable"},
	"bootrun":             {"bootapi", "nodestate", "fabricsim", "mapping", "topology", "power", "units", "internal/texttable"},
	"testcluster":         {"bootapi", "bootconfig", "bootsrv", "nodestate", "nodestate/etcdstore", "fabricsim", "fleet", "images", "mapping", "topology", "internal/atomicfile", "internal/texttable"},
	"cmd/bootctl": {"bootapi", "bootconfig", "bootrun", "bootsrv", "delivery", "dhcpd", "fabricsim", "fleet", "images", "images/ociimport", "testcluster", "fabricsim/simrun", "delivery/fetchcli",
		"mapping", "nodeset", "nodestate", "nodestate/boltstore", "nodestate/etcdstore", "power", "report", "routing", "topology", "units", "internal/progress", "internal/suggest",
		"internal/cligrammar", "internal/texttable", "internal/atomicfile", "internal/redfishsim", "internal/ipmibmc"},
	"cmd/bootfetch":      {"delivery/fetchcli", "internal/cligrammar"},
	"bench/dhcp":         {"dhcpd", "topology"},
	"bench/httpboot":     {"images", "testcluster", "topology"},
	"bench/tftp/pintftp": nil,
	"packaging":          nil,

	"internal/yamlerr":                 {"internal/suggest"},
	"internal/suggest":                 nil,
	"internal/cligrammar":              {"internal/suggest"},
	"internal/atomicfile":              nil,
	"internal/heapq":                   nil,
	"internal/texttable":               nil,
	"internal/promreg":                 nil,
	"internal/progress":                nil,
	"internal/procgroup":               nil,
	"internal/testenv":                 nil,
	"internal/codeshape":               nil,
	"internal/codeshape/cmd/codeshape": {"internal/codeshape"},
	"internal/etcdtest":                {"internal/procgroup", "internal/testenv"},
	"internal/ipmibmc":                 {"internal/procgroup"},
	"internal/ipmisim":                 {"internal/ipmibmc", "internal/testenv"},
	"internal/redfishsim":              {"internal/procgroup"},
	"internal/testfix":                 {"images", "topology", "internal/testenv"},
	"internal/testjson":                nil,
	"internal/testjson/cmd/testjson":   {"internal/testjson"},
}

// TestImportLayers checks every package's imports of the module against allowedImports, and that
// every package is listed there.
func TestImportLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports, err := moduleImports(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 20 {
		t.Fatalf("found only %d packages below %s: the walk is broken", len(imports), root)
	}
	for pkg, imps := range imports {
		allowed, ok := allowedImports[pkg]
		if !ok {
			t.Errorf("package %s is not in allowedImports: place it in the layers (docs/packages.md)", pkg)
			continue
		}
		for _, imp := range imps {
			if !slices.Contains(allowed, imp) {
				t.Errorf("%s imports %s, which its layer does not allow", pkg, imp)
			}
		}
	}
}

// moduleImports returns, for each package directory below root (relative), the module packages
// its non-test files import.
func moduleImports(root string) (map[string][]string, error) {
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, is := range f.Imports {
			p, _ := strconv.Unquote(is.Path.Value)
			if strings.HasPrefix(p, module) && !slices.Contains(out[rel], p[len(module):]) {
				out[rel] = append(out[rel], p[len(module):])
			}
		}
		return nil
	})
	return out, err
}
