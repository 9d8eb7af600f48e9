package simrun

import (
	"context"
	"errors"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/mapping"
	"github.com/bootfabric/bootfabric/routing"
	"github.com/bootfabric/bootfabric/topology"
)

// miniJob is a job on the mini machine: two batches of its first board and supernode, under
// scda and bcda.
func miniJob(t *testing.T) *Job {
	t.Helper()
	m, _ := topology.Preset("mini")
	g, err := m.Build()
	if err != nil {
		t.Fatal(err)
	}
	var algos []mapping.Algo
	for _, n := range []string{"scda", "bcda"} {
		a, err := mapping.ParseAlgo(n, g.Hierarchy())
		if err != nil {
			t.Fatal(err)
		}
		algos = append(algos, a)
	}
	batches := []topology.Batch{{Label: "b0", Nodes: []int{0, 1, 2, 3}}, {Label: "s0", Nodes: []int{0, 1, 2, 3, 4, 5, 6, 7}}}
	return &Job{Graph: g, Batches: batches, Algos: algos, Config: fabricsim.DefaultFlowConfig(fabricsim.TFTP), Arrival: "all", Log: zap.NewNop()}
}

func TestJobRuns(t *testing.T) {
	hops := func(j *Job) {
		h, err := routing.NewHopTable(j.Graph, 0)
		if err != nil {
			t.Fatal(err)
		}
		j.Multicast, j.Hops, j.Mcast = true, h, routing.McastFULB
	}
	for _, tc := range []struct {
		name  string
		setup func(*Job)
		want  []string // batch/algo/delivery of each run
	}{
		{"unicast", func(*Job) {}, []string{"b0/scda/", "b0/bcda/", "s0/scda/", "s0/bcda/"}},
		{"multicast", hops, []string{"b0/scda/unicast", "b0/scda/multicast", "b0/bcda/unicast", "b0/bcda/multicast",
			"s0/scda/unicast", "s0/scda/multicast", "s0/bcda/unicast", "s0/bcda/multicast"}},
		{"p2p", func(j *Job) { j.P2P = true }, []string{"b0/scda/unicast", "b0/scda/p2p", "b0/bcda/unicast", "b0/bcda/p2p",
			"s0/scda/unicast", "s0/scda/p2p", "s0/bcda/unicast", "s0/bcda/p2p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := miniJob(t)
			j.Health = HealthOptions{Algorithm: fabricsim.HealthBinomial, Seed: 1}
			tc.setup(j)
			runs, err := j.Run(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range runs {
				got = append(got, r.Batch+"/"+r.Algo+"/"+r.Delivery)
				if r.Result == nil || r.Result.Nodes != len(j.batch(r.Batch).Nodes) || r.Health == nil || r.Health.Nodes != r.Result.Nodes {
					t.Errorf("run %s/%s: %d nodes, health %v", r.Batch, r.Algo, r.Result.Nodes, r.Health)
				}
				if r.Delivery == "multicast" || r.Delivery == "p2p" {
					if r.Speedup <= 0 {
						t.Errorf("run %s/%s/%s: no speedup", r.Batch, r.Algo, r.Delivery)
					}
				}
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("runs %v, want %v", got, tc.want)
			}
			if runs[0].Health != runs[len(runs)/2-1].Health {
				t.Error("the batch's runs do not share one health aggregation")
			}
		})
	}
}

func (j *Job) batch(label string) topology.Batch {
	for _, b := range j.Batches {
		if b.Label == label {
			return b
		}
	}
	return topology.Batch{}
}

func TestJobErrors(t *testing.T) {
	j := miniJob(t)
	j.Arrival = "ramp:x"
	if _, err := j.Run(context.Background()); err == nil || err.Error() != "--arrival ramp:x: want ramp:N with N nodes per second" {
		t.Errorf("bad ramp: %v", err)
	}
	j = miniJob(t)
	j.Health = HealthOptions{Algorithm: fabricsim.HealthTask, Faults: 50}
	if _, err := j.Run(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "--health task, batch b0: ") {
		t.Errorf("more faults than nodes: %v", err)
	}
	j = miniJob(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := j.Run(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want context.Canceled", err)
	}
}
