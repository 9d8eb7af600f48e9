package report

import (
	"errors"
	"testing"

	"github.com/bootfabric/bootfabric/topology"
)

// FuzzParseScenario feeds arbitrary bytes to the scenario parser and applies what parses to the
// paper's machine: neither may panic, and every error is located in the file.
func FuzzParseScenario(f *testing.F) {
	for _, seed := range []string{
		"name: N5 at 10 Gb/s\nsegments:\n  N5: 10000\n",
		"name: more\nservers:\n  count: 320\n  per_cascade: 20\n",
		"name: down\nfailed_servers: [bs3, 17]\nfailed_cascades: [0]\nimage_size: 100MB\n",
		"name: x\nbogus: 1\n",
	} {
		f.Add([]byte(seed))
	}
	base, _ := topology.Preset("sunway")
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseScenario(data, "f.yaml")
		if err != nil {
			var te *topology.Error
			if !errors.As(err, &te) || te.File != "f.yaml" {
				t.Fatalf("error %v is not located in f.yaml", err)
			}
			return
		}
		if s.Servers != nil && s.Servers.Count != nil && *s.Servers.Count > 4096 {
			return // a valid but large machine: building it is not what this fuzzes
		}
		if _, err := s.apply(base, nil, 50e6); err != nil {
			var te *topology.Error
			if !errors.As(err, &te) {
				t.Fatalf("apply error %v is not located", err)
			}
		}
	})
}
