// Command testjson reads `go test -json` on its standard input and writes go test's plain output
// (package ok and FAIL lines, build errors, failed tests' output in full) on its standard output;
// at the end it writes the slowest top-level tests of the packages named by -slowest to standard
// error. scripts/test runs the suite through it:
//
//	go test -json ./... | testjson -slowest github.com/bootfabric/bootfabric/testcluster
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/bootfabric/bootfabric/internal/testjson"
)

func main() {
	verbose := flag.Bool("v", false, "write every test's output, as go test -v does")
	slowest := flag.String("slowest", "", "comma-separated import paths whose slowest tests are listed at the end")
	n := flag.Int("n", 15, "how many of a package's slowest tests to list")
	prefix := flag.String("prefix", "", "text written before the list's heading (scripts/test: names the script)")
	flag.Parse()
	sum, err := testjson.Copy(os.Stdout, os.Stdin, *verbose)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testjson:", err)
		os.Exit(2)
	}
	if *slowest == "" {
		return
	}
	for _, pkg := range strings.Split(*slowest, ",") {
		var b strings.Builder
		if err := sum.WriteSlowest(&b, pkg, *n); err != nil {
			fmt.Fprintln(os.Stderr, "testjson:", err)
			os.Exit(2)
		}
		if b.Len() > 0 {
			fmt.Fprint(os.Stderr, *prefix+b.String())
		}
	}
}
