// Package testenv decides what a test does when this machine lacks something it needs: a tool,
// a Debian package, root. On a developer's machine the test skips and says why; in CI
// (BOOTFABRIC_NO_SKIP=1, set by .ci/run) it fails instead, so that a runner without root or
// without a package cannot go green with every real-client test skipped.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// NoSkipVar is the environment variable that turns environment skips into failures.
const NoSkipVar = "BOOTFABRIC_NO_SKIP"

// Strict reports whether environment skips are failures (NoSkipVar is 1 or true).
func Strict() bool {
	v := os.Getenv(NoSkipVar)
	return v == "1" || v == "true"
}

// Skip skips tb for a missing tool, package or privilege, or fails it when Strict. Skips chosen
// by the runner (-short) are not environment skips: use tb.Skip for those.
func Skip(tb testing.TB, format string, args ...any) {
	tb.Helper()
	msg := fmt.Sprintf(format, args...)
	if Strict() {
		tb.Fatalf("%s (%s=1: a missing tool, package or privilege fails the test)", msg, NoSkipVar)
		return
	}
	tb.Skip(msg)
}

// NeedRoot skips (or fails, see Skip) tb unless it runs as root.
func NeedRoot(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Skip(tb, "needs root %s", why)
	}
}

// NeedTool returns the path of the named program, or skips (or fails, see Skip) tb naming the
// Debian package that has it.
func NeedTool(tb testing.TB, name, debianPackage string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Skip(tb, "needs %s (Debian package %s; scripts/test installs it when root)", name, debianPackage)
	}
	return p
}

// NeedFile skips (or fails, see Skip) tb unless path exists, naming the Debian package with it.
func NeedFile(tb testing.TB, path, debianPackage string) {
	tb.Helper()
	if _, err := os.Stat(path); err != nil {
		Skip(tb, "needs %s (Debian package %s; scripts/test installs it when root)", path, debianPackage)
	}
}
