package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// fmtFixed writes v with prec decimals, rounding half away from zero (78.125 -> 78.13).
func fmtFixed(v float64, prec int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	s := strconv.FormatFloat(roundHalfAway(v, prec), 'f', prec, 64)
	if strings.HasPrefix(s, "-") && strings.Trim(s, "-0.") == "" {
		s = s[1:]
	}
	return s
}

// flowCell is the flow model's batch time, or - where it did not run (scenarios run it for the
// recommended mapping only).
func flowCell(r *Row) string {
	if r.FlowSeconds == 0 {
		return "-"
	}
	return fmtFixed(r.FlowSeconds, 2)
}

func ratio(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmtFixed(r, 2)
}

// fmtSig writes v with up to 4 significant digits, trailing zeros trimmed (102.4, 3.906, 20).
func fmtSig(v float64) string {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return fmt.Sprint(v)
	}
	d := 3 - int(math.Floor(math.Log10(math.Abs(v))))
	d = max(0, min(d, 6))
	s := fmt.Sprintf("%.*f", d, roundHalfAway(v, d))
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// roundHalfAway rounds half away from zero at d decimals, as the paper prints 78.125 as 78.13.
func roundHalfAway(v float64, d int) float64 {
	p := math.Pow(10, float64(d))
	return math.Round(v*p) / p
}
