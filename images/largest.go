package images

import (
	"fmt"
	"maps"
	"slices"
)

// BootBytes is what a node fetches of profile p to boot: its kernel and initrd.
func (p *Profile) BootBytes() float64 {
	n := float64(p.Files[p.Kernel].Size)
	if p.Initrd != "" {
		n += float64(p.Files[p.Initrd].Size)
	}
	return n
}

// Largest returns, of the profiles nodes boot (each node's profile, by node name), the one whose
// kernel and initrd are largest, with their size and how many profiles there were. A profile the
// store lacks is an error naming a node that boots it.
func (s *Store) Largest(nodes []string, profiles []string) (name string, bytes float64, count int, err error) {
	sizes := map[string]float64{}
	for i, prof := range profiles {
		if _, ok := sizes[prof]; ok {
			continue
		}
		p, err := s.Get(prof)
		if err != nil {
			return "", 0, 0, fmt.Errorf("node %s: profile %q: %w", nodes[i], prof, err)
		}
		sizes[prof] = p.BootBytes()
	}
	names := slices.Sorted(maps.Keys(sizes))
	if len(names) == 0 {
		return "", 0, 0, fmt.Errorf("no profile to size")
	}
	best := names[0]
	for _, n := range names {
		if sizes[n] > sizes[best] {
			best = n
		}
	}
	return best, sizes[best], len(names), nil
}
