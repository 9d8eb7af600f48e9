package fleet

import (
	"fmt"
	"regexp"
)

// Root is the prefix under which every fleet keeps its keys: /bootfabric/<fleet>/.
const Root = "/bootfabric/"

// fleetName is what a fleet may be called: it becomes one path element of every key, so it
// holds no slash and no character that would need quoting in an etcdctl command line.
var fleetName = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

// ValidFleetName reports why name cannot name a fleet, or nil.
func ValidFleetName(name string) error {
	if !fleetName.MatchString(name) {
		return fmt.Errorf("fleet name %q: want 1 to 63 of a-z, 0-9 and '-'", name)
	}
	return nil
}

// validElement reports why s cannot be one element of a key (a record kind, a node name, a
// member name): it must be non-empty and hold no '/', so that prefixes never overlap.
func validElement(what, s string) error {
	if s == "" {
		return fmt.Errorf("%s: empty", what)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == '/' || s[i] < 0x20 || s[i] == 0x7f {
			return fmt.Errorf("%s %q: '/' and control characters are not allowed", what, s)
		}
	}
	return nil
}

// keys builds the fleet's keys; see the package documentation for the layout.
type keys struct {
	prefix string // Root + fleet + "/"
}

func newKeys(fleet string) keys { return keys{prefix: Root + fleet + "/"} }

func (k keys) config() string            { return k.prefix + "config" }
func (k keys) membersPrefix() string     { return k.prefix + "members/" }
func (k keys) member(name string) string { return k.membersPrefix() + name }
func (k keys) recordsPrefix(kind string) string {
	return k.prefix + "records/" + kind + "/"
}
func (k keys) record(kind, name string) string { return k.recordsPrefix(kind) + name }
func (k keys) addrPrefix() string              { return k.prefix + "addr/" }
func (k keys) addr(ip string) string           { return k.addrPrefix() + ip }
func (k keys) macPrefix() string               { return k.prefix + "mac/" }
func (k keys) mac(mac string) string           { return k.macPrefix() + mac }
func (k keys) eventsPrefix(kind string) string { return k.prefix + "events/" + kind + "/" }
func (k keys) eventSeq(kind string) string     { return k.prefix + "eventseq/" + kind }
