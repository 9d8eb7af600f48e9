package main

import (
	"os"
	"time"

	"golang.org/x/term"

	"github.com/bootfabric/bootfabric/internal/progress"
)

// progressDelay is how long a command works before its bar appears: quick runs (most of them,
// and every test) then never flash one.
const progressDelay = 500 * time.Millisecond

// progressBar returns a progress bar on stderr for work of total units (0: unknown), or nil when
// stderr is not a terminal: scripts, pipes and tests then keep byte for byte the output they had.
// It is drawn at every log level: the logger writes through the same progress.Line, so a log
// line erases the bar instead of running into it, and the bar comes back below. A nil bar is
// valid: its methods do nothing and its Func is nil, which the computing packages take as "no
// progress wanted", so call sites need no checks.
func (e *env) progressBar(label string, total int, unit string) *progress.Reporter {
	if !isTerminal(e.stderr) {
		return nil
	}
	cols := 0
	if f, ok := e.stderr.(*os.File); ok {
		cols, _, _ = term.GetSize(int(f.Fd()))
	}
	return progress.New(e.line, progress.Options{Label: label, Total: total, Unit: unit, Terminal: true, Delay: progressDelay, Columns: cols})
}
