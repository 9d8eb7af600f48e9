package main

import (
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/fabricsim/simrun"
	"github.com/bootfabric/bootfabric/internal/texttable"
	"github.com/urfave/cli/v2"
	"go.uber.org/zap"
)

func planCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:  "plan",
		Usage: "predict boot bandwidth, bottleneck segments and boot time per batch and mapping (the paper's model)",
		Description: "With no flags: the paper's machine (sunway), all algorithms side by side with the ratio to\n" +
			"scda, and the paper's ladder of batches (1, 20, 21, 32 boards; 1 to 40 cabinets).",
		Flags: append(machineFlags(), outputFlag("table", "json", "yaml", "csv"),
			withChoices(cli.StringFlag{Name: "model", Value: "analytic", Usage: "analytic (the paper's per-segment model), flow (also the flow-level simulation of the same boot, side by side)"},
				"analytic", "flow"), deliveryFlag()),
		Action: func(c *cli.Context) error { return runPlan(e, c) },
	}
}

func runPlan(e *env, c *cli.Context) error {
	format := c.String("output")
	model := c.String("model")
	if model != "analytic" && model != "flow" {
		return badInput("--model: %q is not one of analytic, flow", model)
	}
	delivery, err := readDelivery(c)
	if err != nil {
		return err
	}
	in, err := readMachineInput(c)
	if err != nil {
		return err
	}
	if err := in.checkP2P(delivery); err != nil {
		return err
	}
	pin := fabricsim.PlanInput{Graph: in.Graph, Algos: in.Algos, Batches: in.Batches, ImageBytes: in.ImageBytes, Absent: in.Absent, Dead: in.Dead, Flow: model == "flow", Delivery: delivery}
	pin.ServerBytes, _ = in.p2pSplit()
	if pin.Flow {
		bar := e.progressBar("plan", 0, "rows")
		defer bar.Done()
		pin.Progress = bar.Func()
	}
	rows, err := fabricsim.Plan(pin)
	if err != nil {
		return err
	}
	e.log.Debug("planned", zap.Int("rows", len(rows)))
	p := &simrun.Plan{Topology: in.Graph.Name, Nodes: len(in.Graph.Nodes()), Servers: len(in.Graph.Servers()), ImageBytes: in.ImageBytes,
		Profile: in.Profile, Delivery: delivery, Segments: fabricsim.SegmentNames(in.Graph), AbsentServers: fabricsim.ServerNames(in.Absent),
		DeadServers: fabricsim.ServerNames(in.Dead), Rows: rows, KernelBytes: in.KernelBytes, InitrdBytes: in.InitrdBytes, Flow: pin.Flow,
		Absent: in.Absent, Dead: in.Dead}
	p.P2PServerBytes, p.P2PRootBytes = in.p2pSplit()
	if format == "csv" {
		return texttable.WriteCSV(e.stdout, p.CSV())
	}
	return writeResult(e.stdout, format, p, p.WriteTable)
}
