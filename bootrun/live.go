package bootrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bootfabric/bootfabric/bootapi"
	"github.com/bootfabric/bootfabric/nodestate"
	"github.com/bootfabric/bootfabric/power"
	"go.uber.org/zap"
)

// Live runs a controller against real machines: it powers nodes through their controllers,
// watches their boots through the boot servers, and journals every change: each node's phase
// changes, retries and give-ups, the servers' states of the nodes in flight, and the run's
// start, pauses, resumes, abort and end, each with its time.
type Live struct {
	Controller *Controller
	// Names and Power are by node, in the controller's order.
	Names   []string
	Power   []power.Target
	Servers Servers
	Journal *Journal
	// Resumed holds each node's last journal entry of an earlier run (nil: a new run).
	Resumed []*JournalEntry
	// ControlFile, when set, is read at every poll: "pause", "resume" or "abort" written there
	// by `bootctl boot pause|resume|abort` reach the run.
	ControlFile string
	Poll        time.Duration // default 1 s
	PowerOpts   power.RunOptions
	Log         *zap.Logger
	Now         func() time.Time // default time.Now
	// Progress, when set, is told after every poll how many nodes are healthy or failed.
	Progress func(done, total int)
	// RebootHealthy boots the nodes that are healthy on the servers as well (a re-image, a new
	// kernel): armed on their servers and power cycled, where by default they are skipped.
	RebootHealthy bool
	// Prediction, when set, is the run's dry run: at the start its times to healthy are told to
	// the servers (when Servers can take them, RunAnnouncer), whose boot pages draw them beside
	// what they measure. RunName names the run there.
	Prediction *Prediction
	RunName    string

	start    time.Time
	baseline []int
	seen     map[string]NodeState
	control  string
	results  chan Event
	wg       sync.WaitGroup
	bmc      *power.Pacer
	fan      power.FanOut
	cycle    []bool       // nodes running now (healthy, rebooted on purpose): cycled, not powered on
	logged   []journaled  // each node's record as last journaled
	srv      []ServerSeen // each node as the servers showed it at the last poll
	srvSeen  []ServerSeen // ... and as last journaled
	touched  []int        // nodes an event or action of the current act may have changed
	adapt    liveAdapt    // liveadapt.go
}

// journaled is what of a node's record, once changed, makes a journal entry.
type journaled struct {
	phase    Phase
	attempts int
	failures int
}

// Run drives the run until every node is healthy or failed, or ctx ends (the journal keeps
// where it stopped). It returns the nodes' records.
func (l *Live) Run(ctx context.Context) ([]NodeRecord, error) {
	if err := l.init(ctx); err != nil {
		return nil, err
	}
	defer l.wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	word := RunStarted
	if l.Resumed != nil {
		word = RunResumed
	}
	l.runEvent(word, "")
	l.announce(ctx)
	l.scan() // the nodes skipped or restored before Start
	if err := l.act(ctx, l.Controller.Start(l.now())); err != nil {
		return nil, err
	}
	tick := time.NewTicker(l.Poll)
	defer tick.Stop()
	wake := time.NewTimer(l.Poll)
	defer wake.Stop()
	for !l.Controller.Done() {
		l.wakeAt(wake)
		var err error
		select {
		case <-ctx.Done():
			return l.Controller.Records(), ctx.Err()
		case ev := <-l.results:
			l.touch(ev.Node)
			err = l.act(ctx, l.Controller.Handle(l.now(), ev))
		case <-tick.C:
			err = l.poll(ctx)
		case <-wake.C:
			err = l.act(ctx, l.Controller.Handle(l.now(), Event{Kind: Tick}))
		}
		if err != nil {
			return l.Controller.Records(), err
		}
	}
	l.scan()
	return l.Controller.Records(), l.Journal.Sync()
}

func (l *Live) now() float64 { return l.Now().Sub(l.start).Seconds() }

// wakeAt sets wake to the controller's next deadline (a paced power-on, a retry's delay, a
// phase's allowance) when it falls before the next poll: acting only at polls rounded every
// pace and retry up to a poll (1 s), where the dry run acts at the deadline itself.
func (l *Live) wakeAt(wake *time.Timer) {
	d := l.Controller.NextDeadline() - l.now()
	if !(d > 0) || d >= l.Poll.Seconds() {
		wake.Stop() // past (the next event or poll handles it), none, or after the next poll
		return
	}
	wake.Reset(time.Duration(d*float64(time.Second)) + time.Millisecond)
}

// announce tells the servers, in the background, the prediction of the nodes the run boots. A server that cannot
// take it costs the run nothing but its page's dashed curve: a warning, and the run goes on.
func (l *Live) announce(ctx context.Context) {
	a, ok := l.Servers.(RunAnnouncer)
	if !ok || l.Prediction == nil {
		return
	}
	skipped := make(map[string]bool) // healthy before the run and left alone
	for _, r := range l.Controller.Records() {
		skipped[r.Name] = r.Skipped
	}
	run := &bootapi.RunPrediction{Run: l.RunName, ElapsedSeconds: l.now(), Nodes: []bootapi.RunNode{}}
	for _, r := range l.Prediction.Records {
		if r.Phase == Healthy && !r.Skipped && !skipped[r.Name] {
			run.Nodes = append(run.Nodes, bootapi.RunNode{Name: r.Name, HealthyAt: r.HealthAt})
		}
	}
	// Beside the run, not before it: a dead server would otherwise hold the first power-on for its
	// timeout. Run waits for it (wg) before it returns.
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := a.AnnounceRun(ctx, run); err != nil {
			l.Log.Warn("telling the boot servers the run's prediction (their boot pages will not draw it)", zap.Error(err))
		}
	}()
}

// init reads the servers once: a node healthy now is skipped unless RebootHealthy (or, resumed,
// kept as the journal has it), and every node's attempt count is the baseline its next boot is
// told apart by.
func (l *Live) init(ctx context.Context) error {
	if l.Now == nil {
		l.Now = time.Now
	}
	if l.Poll <= 0 {
		l.Poll = time.Second
	}
	if l.Log == nil {
		l.Log = zap.NewNop()
	}
	l.start = l.Now()
	l.results = make(chan Event, len(l.Names))
	l.PowerOpts = l.PowerOpts.WithDefaults()
	l.bmc = power.NewPacer(l.PowerOpts.MinInterval)
	l.fan = power.NewFanOut(l.PowerOpts.FanOut)
	states, err := l.Servers.States(ctx)
	if err != nil {
		return err
	}
	l.seen = states
	n := len(l.Names)
	l.baseline, l.cycle, l.logged = make([]int, n), make([]bool, n), make([]journaled, n)
	l.srv, l.srvSeen = make([]ServerSeen, n), make([]ServerSeen, n)
	for i, name := range l.Names {
		st := states[name]
		l.srv[i] = ServerSeen{State: st.State, Attempt: st.Attempt, Server: st.Server}
		if l.Resumed != nil && l.Resumed[i] != nil {
			r := l.Resumed[i].Record
			l.logged[i] = journaled{r.Phase, r.Attempts, len(r.Failures)}
			if s := l.Resumed[i].Server; s != nil {
				l.srvSeen[i] = *s
			}
		}
		l.baseline[i] = st.Attempt
		if err := l.restore(i, st); err != nil {
			return err
		}
	}
	return nil
}

// restore sets node i as the journal left it; a node healthy on the servers and not in flight
// in the journal is skipped.
func (l *Live) restore(i int, st NodeState) error {
	c := l.Controller
	if l.Resumed != nil && l.Resumed[i] != nil {
		e := l.Resumed[i]
		l.baseline[i] = e.Baseline
		r := e.Record
		if r.Phase == Powering {
			r.Phase = Firmware // its answer was lost with the run: the boot servers will tell
		}
		if p, ok := phaseOfNode(st); ok && st.Attempt > e.Baseline && p > r.Phase && r.Phase < Healthy {
			r.Phase = p
		}
		if r.Phase != Queued {
			return c.Restore(l.now(), i, r)
		}
	}
	if st.State == nodestate.Healthy {
		if l.RebootHealthy {
			l.cycle[i] = true // it runs: power on would do nothing
			return nil
		}
		c.Handle(l.now(), Event{Kind: Observed, Node: i, Phase: Healthy})
	}
	return nil
}

// poll reads the servers and the control file and tells the controller what changed.
func (l *Live) poll(ctx context.Context) error {
	if err := l.readControl(ctx); err != nil {
		return err
	}
	states, err := l.Servers.States(ctx)
	if err != nil {
		l.Log.Warn("boot servers unreadable; trying again at the next poll", zap.Error(err))
		return l.act(ctx, l.Controller.Handle(l.now(), Event{Kind: Tick}))
	}
	l.seen = states
	measured, err := l.observe(ctx, states)
	if err != nil {
		return err
	}
	for _, i := range measured {
		if err := l.measure(ctx, i, states[l.Names[i]]); err != nil {
			return err
		}
	}
	if err := l.act(ctx, l.Controller.Handle(l.now(), Event{Kind: Tick})); err != nil {
		return err
	}
	if err := l.journalPoll(); err != nil {
		return err
	}
	if l.Progress != nil {
		l.Progress(l.finished(), len(l.Names))
	}
	return nil
}

// observe hands the controller each node's phase the servers show past its record's, and returns
// the nodes whose measurements are to follow. The measurements go after every node's phase: a
// node that entered its link before this poll is counted there before another's give-up cuts the
// link (else it would count as entered after the cut, and its own give-up, as old, would cut once
// more).
func (l *Live) observe(ctx context.Context, states map[string]NodeState) ([]int, error) {
	recs := l.Controller.Records()
	var measured []int
	for i, name := range l.Names {
		r := recs[i]
		if r.Phase < Powering || r.Phase >= Healthy {
			continue
		}
		st, ok := states[name]
		if ok {
			l.srv[i] = ServerSeen{State: st.State, Attempt: st.Attempt, Server: st.Server}
			if st.InState > 0 {
				l.srv[i].Since = max(0, l.now()-st.InState)
			}
		}
		if !ok || st.Attempt <= l.baseline[i] {
			continue
		}
		if p, known := phaseOfNode(st); known && (p > r.Phase || p == Failed) {
			l.touch(i)
			if err := l.act(ctx, l.Controller.Handle(l.now(), Event{Kind: Observed, Node: i, Phase: p, Ago: st.ago(p)})); err != nil {
				return nil, err
			}
		}
		measured = append(measured, i)
	}
	return measured, nil
}

// journalPoll journals, once a poll, every node: a deadline passed in any event's handling fails
// an attempt with no action to show it, and the servers' states of the nodes in flight are kept.
func (l *Live) journalPoll() error {
	l.scan()
	for i := range l.Names {
		r := &l.Controller.Records()[i]
		if r.Phase >= Powering && r.Phase < Healthy && l.srv[i] != l.srvSeen[i] && l.srv[i].Attempt > l.baseline[i] {
			l.entry(i, EntryServer)
		}
	}
	return l.Journal.Sync()
}

func (l *Live) finished() int {
	n := 0
	for _, r := range l.Controller.Records() {
		if r.Phase >= Healthy {
			n++
		}
	}
	return n
}

// readControl passes a new word of the control file to the controller.
func (l *Live) readControl(ctx context.Context) error {
	if l.ControlFile == "" {
		return nil
	}
	data, err := os.ReadFile(l.ControlFile)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("control file: %w", err)
	}
	word := strings.TrimSpace(string(data))
	if word == l.control {
		return nil
	}
	l.control = word
	kind, ok := map[string]EventKind{"pause": Pause, "resume": Resume, "abort": Abort}[word]
	if !ok {
		l.Log.Warn("control file: unknown word; want pause, resume or abort", zap.String("word", word))
		return nil
	}
	l.Log.Info("operator: "+word, zap.String("file", l.ControlFile))
	switch kind {
	case Resume:
		l.runEvent(RunResume, "resumed by the operator")
	case Abort:
		l.runEvent(RunAbort, "aborted by the operator")
	}
	return l.act(ctx, l.Controller.Handle(l.now(), Event{Kind: kind}))
}

// act carries out the controller's actions and journals every node they, or the event that led
// to them, changed, and the run's pause and end.
func (l *Live) act(ctx context.Context, acts []Action) error {
	for _, a := range acts {
		switch a.Kind {
		case PowerOn, Cycle:
			l.baseline[a.Node] = l.seen[l.Names[a.Node]].Attempt
			l.Log.Info("powering on", zap.String("node", l.Names[a.Node]), zap.Int("attempt", a.Attempt), zap.Stringer("action", a.Kind))
			l.powerOn(ctx, a.Node, a.Kind == Cycle || l.cycle[a.Node])
		case GiveUp:
			l.Log.Warn("giving up on a node", zap.String("node", l.Names[a.Node]), zap.String("class", string(a.Class)), zap.Int("attempts", a.Attempt))
		case Paused:
			l.Log.Warn("admission paused", zap.String("reason", a.Reason))
			l.runEvent(RunPaused, a.Reason)
		case PowerOff:
			l.Log.Info("powering off: its link is congested", zap.String("node", l.Names[a.Node]))
			l.powerOff(ctx, a.Node)
		case Resumed:
			l.Log.Info("admission resumed", zap.String("reason", a.Reason))
			l.runEvent(RunResume, a.Reason)
		case Finished:
			l.runEvent(RunFinished, "")
		}
		if a.Kind <= GiveUp || a.Kind == PowerOff {
			l.touch(a.Node)
		}
	}
	// In node order, whatever order they were touched in: the same run writes the same lines.
	slices.Sort(l.touched)
	for _, i := range slices.Compact(l.touched) {
		l.journalChange(i)
	}
	l.touched = l.touched[:0]
	return l.Journal.Sync()
}

func (l *Live) touch(i int) {
	if i >= 0 && i < len(l.Names) {
		l.touched = append(l.touched, i)
	}
}

// scan journals every node whose record changed since its last entry.
func (l *Live) scan() {
	for i := range l.Names {
		l.journalChange(i)
	}
}

// journalChange journals node i if its phase, attempts or failures changed, saying how.
func (l *Live) journalChange(i int) {
	r := &l.Controller.Records()[i]
	k := journaled{r.Phase, r.Attempts, len(r.Failures)}
	old := l.logged[i]
	if k == old {
		return
	}
	l.logged[i] = k
	ev := EntryPhase
	switch {
	case r.Skipped:
		ev = EntrySkipped
	case r.Phase == Failed:
		ev = EntryFailed
	case k.failures > old.failures && r.Phase == Queued:
		ev = EntryRetry
	}
	l.entry(i, ev)
}

// entry journals node i's record now, with what the servers last showed of it.
func (l *Live) entry(i int, ev string) {
	srv := l.srv[i]
	l.srvSeen[i] = srv
	l.Journal.Add(JournalEntry{Node: i, Record: l.Controller.Records()[i], Baseline: l.baseline[i],
		Time: l.Now().UTC(), At: l.now(), Event: ev, Server: &srv})
}

func (l *Live) runEvent(word, reason string) {
	l.Journal.AddEvent(RunEvent{Run: word, Reason: reason, Time: l.Now().UTC(), At: l.now()})
}

// powerOn arms the node's reboot on its server, sets its next boot to the network and powers
// it on (or cycles it), in the background within the fan-out and each BMC's pace; the answer
// comes back as an event.
func (l *Live) powerOn(ctx context.Context, i int, cycle bool) {
	t := l.Power[i]
	server := l.seen[l.Names[i]].Server
	l.adapt.init(len(l.Names))
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer l.adapt.lockNode(i)() // after a power-off of the node's, never before
		release, err := l.fan.Acquire(ctx)
		if err != nil {
			return
		}
		defer release()
		if err := l.Servers.ArmReboot(ctx, t.Node, server); err != nil {
			l.Log.Warn("arming the reboot", zap.String("node", t.Node), zap.Error(err))
		}
		err = l.bmc.Wait(ctx, t.BMC)
		if err == nil {
			err = switchOn(ctx, t.Controller, cycle, l.PowerOpts)
		}
		ev := Event{Kind: PowerAnswered, Node: i}
		if err != nil {
			ev.Class = classOf(err)
			l.Log.Warn("power-on failed", zap.String("node", t.Node), zap.String("class", string(ev.Class)), zap.Error(err))
		}
		select {
		case l.results <- ev:
		case <-ctx.Done():
		}
	}()
}

func switchOn(ctx context.Context, ctl power.Controller, cycle bool, opts power.RunOptions) error {
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if err := ctl.PXENext(ctx, opts.Mode); err != nil {
		return err
	}
	if cycle {
		return ctl.Cycle(ctx)
	}
	return ctl.On(ctx)
}

// classOf maps a power error to the run's failure class.
func classOf(err error) Class {
	switch power.Classify(err) {
	case power.Unreachable:
		return BMCUnreachable
	case power.AuthRefused:
		return BMCAuth
	case power.Busy:
		return BMCBusy
	case power.TimedOut:
		return BMCTimeout
	}
	return BMCError
}
