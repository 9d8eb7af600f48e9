// Package suggest finds what a user probably meant: the edit distance behind the "did you mean"
// hints of the command line and of configuration errors.
package suggest

// Distance is the optimal string alignment distance between a and b: insertions, deletions,
// substitutions and transpositions of adjacent letters, each one edit (so "plna" is one edit
// from "plan").
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

// Nearest returns the candidate closest to s by Distance if it is close enough to be a typo, or a
// unique candidate s is a prefix of (two letters at least); else "".
func Nearest(s string, candidates []string) string {
	best, bestD := "", -1
	for _, c := range candidates {
		if d := Distance(s, c); bestD < 0 || d < bestD {
			best, bestD = c, d
		}
	}
	if bestD >= 0 && bestD <= max(1, min(len(s), len(best))/3) {
		return best
	}
	var prefixed []string
	for _, c := range candidates {
		if len(s) >= 2 && len(c) >= len(s) && c[:len(s)] == s {
			prefixed = append(prefixed, c)
		}
	}
	if len(prefixed) == 1 {
		return prefixed[0]
	}
	return ""
}
