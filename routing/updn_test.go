package routing

import (
	"math/rand/v2"
	"testing"
)

func TestUpDownAndMinHop(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for i := 0; i < 30; i++ {
		p := randomPGFT(r)
		g0, err := p.Build()
		if err != nil {
			t.Fatal(err)
		}
		g := g0
		if i%2 == 1 {
			g = degrade(t, r, g0, 0.15)
			if !updownConnected(g) {
				continue
			}
		}
		for _, e := range []Engine{UpDown{}, MinHop{}} {
			tb, err := e.Compute(g)
			if err != nil {
				t.Fatal(err)
			}
			rep := Check(tb, CheckOptions{UpDown: e.Name() == "updn", Congestion: true})
			if rep.Unreachable != 0 || rep.Loops != 0 {
				t.Errorf("%s %s: %v", p, e.Name(), rep)
			}
			if e.Name() == "updn" && !rep.Valid {
				t.Errorf("%s updn: %v", p, rep)
			}
			if i%2 == 0 && e.Name() == "minhop" && !rep.DeadlockFree {
				t.Errorf("%s minhop on an intact PGFT has a dependency cycle", p)
			}
		}
	}
}
