// Package units parses and prints the sizes bootfabric's inputs and outputs carry: bytes with an SI
// (MB = 10^6 bytes) or binary (MiB = 2^20 bytes) unit. A size always needs its unit, so that
// "50" cannot silently mean bytes to one reader and megabytes to another.
package units

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

var sizeRE = regexp.MustCompile(`^(\d+(?:\.\d+)?)\s*([A-Za-z]+)$`)

// byteUnits are the units a size may carry.
var byteUnits = map[string]float64{
	"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

// MaxSize is the largest size ParseSize accepts: 1 PB (10^15 bytes). Nothing bootfabric moves is
// near it, so a larger size is a typo (an extra digit or unit), not a plan.
const MaxSize = 1e15

// ParseSize parses a positive size such as 50MB or 70KiB into bytes; the unit is required, and
// sizes above MaxSize are refused.
func ParseSize(s string) (float64, error) {
	m := sizeRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("size %q: want a number and a unit (B, KB, MB, GB, KiB, MiB, GiB), e.g. 50MB", s)
	}
	mult, ok := byteUnits[m[2]]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s, m[2])
	}
	v, err := strconv.ParseFloat(m[1], 64)
	if err == nil && v <= 0 {
		return 0, fmt.Errorf("size %q: must be positive", s)
	}
	if err != nil || v*mult > MaxSize {
		return 0, fmt.Errorf("size %q: larger than the 1 PB (10^15 bytes) limit", s)
	}
	return v * mult, nil
}

// FormatBytes writes bytes in the largest SI unit that keeps the number at least 1 ("50 MB").
func FormatBytes(b float64) string {
	for _, u := range []struct {
		name string
		mult float64
	}{{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}} {
		if b >= u.mult {
			return strconv.FormatFloat(b/u.mult, 'f', -1, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(b, 'f', -1, 64) + " B"
}
