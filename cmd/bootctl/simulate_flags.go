package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/bootfabric/bootfabric/bootrun"
	"github.com/bootfabric/bootfabric/fabricsim"
	"github.com/bootfabric/bootfabric/topology"
	"github.com/bootfabric/bootfabric/units"
	"github.com/urfave/cli/v2"
)

// simConfig reads the protocol, file and timing flags; with --profile the image is the profile's
// kernel and initrd at their stored sizes.
func simConfig(c *cli.Context, in *machineInput) (fabricsim.FlowConfig, error) {
	proto, err := fabricsim.ParseProtocol(c.String("protocol"))
	if err != nil {
		return fabricsim.FlowConfig{}, badInput("--protocol: %w", err)
	}
	cfg := fabricsim.DefaultFlowConfig(proto)
	spec := c.String("files")
	if c.IsSet("image-size") && !c.IsSet("files") {
		spec = "nbp=70KB:tftp,image=" + c.String("image-size")
	}
	if in.Profile != "" {
		// The profile's kernel and initrd count as one image, as --image-size does, so that
		// simulate and report predict the same boot.
		if c.IsSet("files") {
			return cfg, badInput("--profile %s and --files both give the files fetched; give one", in.Profile)
		}
		spec = fmt.Sprintf("nbp=70KB:tftp,image=%dB", in.KernelBytes+in.InitrdBytes)
	}
	if cfg.Files, err = fabricsim.ParseFiles(spec, proto); err != nil {
		return cfg, badInput("--files: %w", err)
	}
	cfg.TFTPBlockSize, cfg.TFTPWindowSize = c.Int("blksize"), c.Int("windowsize")
	if cfg.HTTPWindowBytes, err = units.ParseSize(c.String("http-window")); err != nil {
		return cfg, badInput("--http-window: %w", err)
	}
	if err := simDurations(c, &cfg); err != nil {
		return cfg, err
	}
	if cfg.TimeStep, err = fabricsim.ParseTimeStep(c.String("time-step")); err != nil {
		return cfg, badInput("--time-step: %w", err)
	}
	cfg.ServerCapMbps = c.Float64("server-cap")
	if !(cfg.ServerCapMbps >= 0) {
		return cfg, badInput("--server-cap: %v must be 0 (none) or a positive rate in Mb/s", cfg.ServerCapMbps)
	}
	return cfg, simCheckTFTP(&cfg)
}

// simCalibrate fits the plant from --calibrate's journals, as bootctl boot does, and puts the
// times the two commands share in place of those no flag gave: the DHCP time and the health
// report's (--health-time, or --health unless it gives a duration).
func simCalibrate(c *cli.Context, cfg *fabricsim.FlowConfig) (*bootrun.Calibration, error) {
	paths := c.StringSlice("calibrate")
	if len(paths) == 0 {
		return nil, nil
	}
	image := 0.0
	for _, f := range cfg.Files[min(1, len(cfg.Files)-1):] { // what follows the NBP
		image += f.Bytes
	}
	cal, err := bootrun.CalibrateJournals(paths, image)
	if err != nil {
		return nil, badInput("--calibrate: %w", err)
	}
	if !c.IsSet("dhcp-time") && !c.IsSet("dhcp") && cal.DHCP.Samples > 0 {
		cfg.DHCPSeconds = cal.DHCP.Median
	}
	// --health gives the time itself unless it names an aggregation (then --health-time does).
	_, notAggregation := fabricsim.ParseHealthAlgorithm(c.String("health"))
	healthGiven := c.IsSet("health-time") || c.IsSet("health") && notAggregation != nil
	if !healthGiven && cal.Health.Samples > 0 {
		cfg.HealthSeconds = cal.Health.Median
	}
	return cal, nil
}

// simCheckTFTP checks the TFTP parameters when a file uses TFTP, so that they are reported as
// flags rather than by the simulator.
func simCheckTFTP(cfg *fabricsim.FlowConfig) error {
	for _, f := range cfg.Files {
		if f.Protocol == fabricsim.TFTP && (cfg.TFTPBlockSize < 8 || cfg.TFTPBlockSize > 65464) {
			return badInput("--blksize: %d is not 8..65464 bytes", cfg.TFTPBlockSize)
		}
		if f.Protocol == fabricsim.TFTP && (cfg.TFTPWindowSize < 1 || cfg.TFTPWindowSize > 65535) {
			return badInput("--windowsize: %d is not 1..65535 blocks", cfg.TFTPWindowSize)
		}
	}
	return nil
}

// simDurations reads --rtt, --server-time, --dhcp-time (or its old name --dhcp) and the health
// report time: --health-time, or --health when it is a duration rather than the name of an
// aggregation (see simOptions).
func simDurations(c *cli.Context, cfg *fabricsim.FlowConfig) error {
	dhcp := "dhcp-time"
	if c.IsSet("dhcp") {
		if c.IsSet("dhcp-time") {
			return badInput("--dhcp is the old name of --dhcp-time: give one")
		}
		dhcp = "dhcp"
	}
	for _, d := range []struct {
		flag string
		dst  *float64
	}{{"rtt", &cfg.RTTSeconds}, {"server-time", &cfg.ServerSeconds}, {dhcp, &cfg.DHCPSeconds}, {"health-time", &cfg.HealthSeconds}} {
		if d.flag == "health-time" && !c.IsSet("health-time") {
			hv := c.String("health")
			if _, err := fabricsim.ParseHealthAlgorithm(hv); err == nil {
				continue
			}
			v, err := time.ParseDuration(hv)
			if err != nil || v < 0 {
				return badInput("--health: %q is not binomial, task or a non-negative duration like 100ms", hv)
			}
			*d.dst = v.Seconds()
			continue
		}
		v := c.Duration(d.flag)
		if v < 0 {
			return badInput("--%s: %v must not be negative", d.flag, v)
		}
		*d.dst = v.Seconds()
	}
	return nil
}

// simReadArrivals reads the --arrival file (see fabricsim.ReadArrivals).
func simReadArrivals(path string, h *topology.Hierarchy) (map[int]float64, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("--arrival %q: not all, ramp:N or an existing file", path)
		}
		return nil, fmt.Errorf("--arrival: %w", err)
	}
	defer f.Close()
	return fabricsim.ReadArrivals(f, path, h)
}

// simFails is --fail and --detect, checked against the machine and the servers down from the start.
type simFails struct {
	failures []fabricsim.ServerFailure
	detect   float64
}

// simFailures reads --fail and --detect (nil without --fail); fabricsim.ParseFailures checks the
// failures against the machine and the servers down from the start.
func simFailures(c *cli.Context, g *topology.Graph, in *machineInput) (*simFails, error) {
	items := c.StringSlice("fail")
	if len(items) == 0 {
		if c.IsSet("detect") {
			return nil, badInput("--detect needs --fail")
		}
		return nil, nil
	}
	d := c.Duration("detect")
	if d < 0 {
		return nil, badInput("--detect: %v must not be negative", d)
	}
	failures, err := fabricsim.ParseFailures(g, items, in.Absent, in.Dead)
	var item *fabricsim.FailureItemError
	if errors.As(err, &item) {
		return nil, badInput("--fail %w", err)
	} else if err != nil {
		return nil, badInput("--fail: %w", err)
	}
	return &simFails{failures: failures, detect: d.Seconds()}, nil
}
