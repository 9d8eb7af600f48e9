package fabricsim

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
)

// The text forms of a boot's inputs, as bootctl simulate's --files and --arrival take them.

// ParseFiles parses the files each node fetches, in order: NAME=SIZE[:PROTOCOL],... with a
// size such as 70KB or 40MiB (units.ParseSize) and a protocol tftp, http or none; files without
// one use proto. Example: "nbp=70KB:tftp,kernel=10MB,initrd=40MB". An error names the item and
// what is wrong with it.
func ParseFiles(spec string, proto Protocol) ([]File, error) {
	var out []File
	for _, item := range strings.Split(spec, ",") {
		f, err := parseFile(strings.TrimSpace(item), proto)
		if err != nil {
			return nil, err
		}
		for _, o := range out {
			if o.Name == f.Name {
				return nil, fmt.Errorf("file %q named twice", f.Name)
			}
		}
		out = append(out, f)
	}
	return out, nil
}

// parseFile parses one NAME=SIZE[:PROTOCOL] item.
func parseFile(item string, proto Protocol) (File, error) {
	name, rest, ok := strings.Cut(item, "=")
	if !ok || name == "" {
		return File{}, fmt.Errorf("%q: want NAME=SIZE[:PROTOCOL], e.g. kernel=10MB:http", item)
	}
	size, p, hasProto := strings.Cut(rest, ":")
	f := File{Name: name, Protocol: proto}
	var err error
	if f.Bytes, err = units.ParseSize(size); err != nil {
		return File{}, fmt.Errorf("%s: %w", name, err)
	}
	if hasProto {
		if f.Protocol, err = ParseProtocol(p); err != nil {
			return File{}, fmt.Errorf("%s: %w", name, err)
		}
	}
	return f, nil
}

// MaxArrivalSeconds bounds a power-on time: a larger one is a typo, not a plan.
const MaxArrivalSeconds = 1e9

// ReadArrivals reads power-on times, one "NODE SECONDS" line per node (or NODE,SECONDS), from r:
// NODE is a node name of h (s0-b3-n1), SECONDS a number of seconds or a duration (1.5s, 300ms);
// # starts a comment, blank lines are skipped. It returns the times by node index. name is
// what errors call the input (its path): "NAME:LINE: what is wrong".
func ReadArrivals(r io.Reader, name string, h *topology.Hierarchy) (map[int]float64, error) {
	out := map[int]float64{}
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.FieldsFunc(text, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
		if len(fields) == 0 {
			continue
		}
		n, t, err := parseArrival(fields, text, h)
		if err == nil {
			if _, dup := out[n]; dup {
				err = fmt.Errorf("node %s listed twice", fields[0])
			}
		}
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out[n] = t
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no arrivals", name)
	}
	return out, nil
}

// parseArrival parses the fields of one arrival line (text, for the error).
func parseArrival(fields []string, text string, h *topology.Hierarchy) (int, float64, error) {
	if len(fields) != 2 {
		return 0, 0, fmt.Errorf("want NODE SECONDS, got %q", strings.TrimSpace(text))
	}
	n, err := h.ParseNode(fields[0])
	if err != nil {
		return 0, 0, fmt.Errorf("unknown node: %w", err)
	}
	t, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		d, derr := time.ParseDuration(fields[1])
		if derr != nil {
			return 0, 0, fmt.Errorf("time %q: want seconds or a duration like 1.5s", fields[1])
		}
		t = d.Seconds()
	}
	if !(t >= 0) || t > MaxArrivalSeconds {
		return 0, 0, fmt.Errorf("time %q must be a non-negative number of seconds", fields[1])
	}
	return n, t, nil
}
