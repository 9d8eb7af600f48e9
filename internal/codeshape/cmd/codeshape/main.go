// Command codeshape lists the module's functions with their length and complexity, largest first,
// as a table for a closing note or a review: go run ./internal/codeshape/cmd/codeshape [-all] [-tests] [ROOT].
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"

	"github.com/bootfabric/bootfabric/internal/codeshape"
)

func main() {
	all := flag.Bool("all", false, "list every function, not only those over a limit")
	tests := flag.Bool("tests", false, "include _test.go files")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	funcs, err := codeshape.Measure(root, codeshape.Options{Tests: *tests})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	sort.SliceStable(funcs, func(i, j int) bool { return funcs[i].Complexity > funcs[j].Complexity })
	for _, f := range funcs {
		if !*all && !f.Over() {
			continue
		}
		mark := ""
		if f.Exempt != "" {
			mark = "\texempt: " + f.Exempt
		}
		fmt.Printf("%d\t%d\t%s\t%s:%d%s\n", f.Lines, f.Complexity, f.Key(), f.File, f.Line, mark)
	}
}
