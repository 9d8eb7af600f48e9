package main

import (
	"runtime/debug"
	"strings"
)

// version describes this build from the information the Go toolchain records in the binary: the
// module version ("(devel)" for a build from a work tree), the VCS commit and whether the tree had
// uncommitted changes, and the Go version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	return describeBuild(bi)
}

func describeBuild(bi *debug.BuildInfo) string {
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if rev := settings["vcs.revision"]; rev != "" {
		c := "commit " + rev
		if settings["vcs.modified"] == "true" {
			c += " (modified)"
		}
		if t := settings["vcs.time"]; t != "" {
			c += " " + t
		}
		parts = append(parts, c)
	} else {
		parts = append(parts, "commit unknown (built without VCS information, e.g. -buildvcs=false)")
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return strings.Join(parts, ", ")
}
