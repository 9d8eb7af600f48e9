package main

import (
	"runtime/debug"
	"strings"
)

// Set at link time by the Makefile (-ldflags "-X main.stampVersion=... -X main.stampCommit=...")
// from git, for builds where the toolchain records no VCS information (GOFLAGS=-buildvcs=false, a
// tree copied without .git into a container); never written at run time.
var (
	stampVersion string
	stampCommit  string
)

// version describes this build from the information the Go toolchain records in the binary: the
// module version ("(devel)" for a build from a work tree), the VCS commit and whether the tree had
// uncommitted changes, and the Go version; the Makefile's stamps fill in what it lacks.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = &debug.BuildInfo{}
	}
	return describeBuild(bi, stampVersion, stampCommit)
}

// describeBuild is version's text for the build information and the link-time stamps ("" when
// not stamped).
func describeBuild(bi *debug.BuildInfo, stampedVersion, stampedCommit string) string {
	v := bi.Main.Version
	if (v == "" || v == "(devel)") && stampedVersion != "" {
		v = stampedVersion
	}
	if v == "" {
		v = "(devel)"
	}
	parts := []string{v}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	switch rev := settings["vcs.revision"]; {
	case rev != "":
		c := "commit " + rev
		if settings["vcs.modified"] == "true" {
			c += " (modified)"
		}
		if t := settings["vcs.time"]; t != "" {
			c += " " + t
		}
		parts = append(parts, c)
	case stampedCommit != "":
		parts = append(parts, "commit "+stampedCommit)
	default:
		parts = append(parts, "commit unknown (built without VCS information, e.g. -buildvcs=false)")
	}
	if bi.GoVersion != "" {
		parts = append(parts, bi.GoVersion)
	}
	return strings.Join(parts, ", ")
}
