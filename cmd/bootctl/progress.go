package main

import (
	"time"

	"go.uber.org/zap/zapcore"

	"github.com/bootfabric/bootfabric/internal/progress"
)

// progressDelay is how long a command works before its bar appears: quick runs (most of them,
// and every test) then never flash one.
const progressDelay = 500 * time.Millisecond

// progressBar returns a progress bar on stderr for work of total units (0: unknown), or nil when
// there must be none: stderr is not a terminal (scripts, pipes and tests keep the exact output
// they had), or the log level is debug (the debug lines narrate the work and would break into
// the bar's line). A nil bar is valid: its methods do nothing and its Func is nil, which the
// computing packages take as "no progress wanted", so call sites need no checks.
func (e *env) progressBar(label string, total int, unit string) *progress.Reporter {
	if !isTerminal(e.stderr) || e.log.Core().Enabled(zapcore.DebugLevel) {
		return nil
	}
	return progress.New(e.stderr, progress.Options{Label: label, Total: total, Unit: unit, Terminal: true, Delay: progressDelay})
}
