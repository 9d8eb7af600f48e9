// Package cligrammar is one strict grammar for a urfave/cli v2 command tree: flags anywhere on the
// line (global ones before or after the command, a command's own before or after its arguments),
// the right number of arguments read from each command's ArgsUsage, required flags checked by the
// command, and a "did you mean" on every usage error, each one line.
package cligrammar

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootfabric/bootfabric/internal/suggest"
	"github.com/urfave/cli/v2"
)

// CompletionFlag is the flag urfave/cli's shell completion appends to the line it completes.
const CompletionFlag = "--generate-bash-completion"

// UsageError is bad input on the command line of one command: it prints as "bootctl plan: ...".
type UsageError struct {
	Cmd string // "bootctl plan"
	Err error
}

func (u *UsageError) Error() string { return u.Cmd + ": " + u.Err.Error() }
func (u *UsageError) Unwrap() error { return u.Err }

// CommandError is an error returned by a command's action, printed with the command's name.
type CommandError struct {
	Cmd string
	Err error
}

func (c *CommandError) Error() string { return c.Cmd + ": " + c.Err.Error() }
func (c *CommandError) Unwrap() error { return c.Err }

// Hint names the flag a stray argument probably belongs to: a command that has Flag, given a
// stray word that Matches, is told "did you mean --Flag WORD?".
type Hint struct {
	Flag    string
	Matches func(word string) bool
}

// Apply prepares the command tree (after app.Setup): every command checks its argument
// count and required flags itself (urfave/cli would print the whole help text on stdout for a
// missing flag), a command with subcommands refuses an unknown one with a suggestion, and flag
// errors become one line with a suggestion.
//
// urfave/cli reports an unknown name after "help" through CommandNotFound, which cannot return an
// error: Apply returns a function that gives the error it recorded, if any.
//
// hints name flags for stray words beyond the choice flags' own values.
func Apply(app *cli.App, hints ...Hint) (notFound func() error) {
	var missing error
	app.CommandNotFound = func(c *cli.Context, name string) {
		subs, path := app.Commands, app.Name
		if c.Command != nil && c.Command.Subcommands != nil && !c.Command.HasName(app.Name) {
			subs, path = c.Command.Subcommands, c.Command.HelpName
		}
		missing = unknownCommand(path, name, subs)
	}
	for i, c := range app.Commands {
		if c.Name == "help" {
			// urfave/cli's help command is one shared value that adds itself to its own
			// subcommands when it runs; bootctl's is a copy without subcommands, so that walking
			// the tree (completion, man) ends.
			h := *c
			h.Subcommands, h.HideHelpCommand = nil, true
			app.Commands[i] = &h
		}
	}
	app.Action = groupAction(app.Name, app.Commands)
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return flagUsageError(app.Name, app.Flags, err)
	}
	var walk func(prefix string, cmds []*cli.Command)
	walk = func(prefix string, cmds []*cli.Command) {
		for _, c := range cmds {
			if c.Name == "help" {
				continue
			}
			path := prefix + " " + c.Name
			flags := append(slices.Clip(c.Flags), app.Flags...) // suggest --log-level too
			c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return flagUsageError(path, flags, err) }
			required := unrequire(c.Flags)
			if c.Action == nil && len(c.Subcommands) > 0 {
				c.Action = groupAction(path, c.Subcommands)
			} else if c.Action != nil {
				c.Action = leafAction(path, c, required, hints, c.Action)
			}
			walk(path, c.Subcommands)
		}
	}
	walk(app.Name, app.Commands)
	return func() error { return missing }
}

// groupAction is the action of a command made of subcommands: help without an argument, else an
// unknown command.
func groupAction(path string, subs []*cli.Command) cli.ActionFunc {
	return func(c *cli.Context) error {
		if !c.Args().Present() {
			if c.Command == nil || c.Command.Name == c.App.Name {
				return cli.ShowAppHelp(c)
			}
			return cli.ShowSubcommandHelp(c)
		}
		return unknownCommand(path, c.Args().First(), subs)
	}
}

// unknownCommand is the error for a command name that is not one of subs, the subcommands of path.
func unknownCommand(path, name string, subs []*cli.Command) error {
	var names []string
	for _, s := range subs {
		if !s.Hidden && s.Name != "help" {
			names = append(names, s.Name)
		}
	}
	msg := fmt.Sprintf("unknown command %q", name)
	if strings.Contains(path, " ") {
		msg += fmt.Sprintf(" for %q", path)
	}
	app, _, _ := strings.Cut(path, " ")
	if s := suggest.Nearest(name, names); s != "" {
		return &UsageError{app, fmt.Errorf("%s; did you mean %q?", msg, s)}
	}
	return &UsageError{app, fmt.Errorf("%s; commands: %s", msg, strings.Join(names, ", "))}
}

// leafAction wraps a command's action with the checks of its arguments and required flags, and
// names the command in the errors it returns.
func leafAction(path string, cmd *cli.Command, required []cli.Flag, hints []Hint, action cli.ActionFunc) cli.ActionFunc {
	lo, hi := arity(cmd.ArgsUsage)
	return func(c *cli.Context) error {
		if err := checkArgs(cmd, c.Args().Slice(), lo, hi, hints); err != nil {
			return &UsageError{path, err}
		}
		if err := checkRequired(c, required); err != nil {
			return &UsageError{path, err}
		}
		if err := checkStrict(c, cmd.Flags); err != nil {
			return &UsageError{path, err}
		}
		err := action(c)
		var ue *UsageError
		if err == nil || errors.As(err, &ue) {
			return err
		}
		return &CommandError{path, err}
	}
}

// checkArgs reports too many or too few arguments for cmd, guessing from a stray argument what the
// user meant.
func checkArgs(cmd *cli.Command, args []string, lo, hi int, hints []Hint) error {
	if len(args) > hi {
		return strayArg(cmd, args[hi], hi, hints)
	}
	if len(args) < lo {
		return fmt.Errorf("missing argument: %s", cmd.ArgsUsage)
	}
	return nil
}

func strayArg(cmd *cli.Command, stray string, hi int, hints []Hint) error {
	msg := fmt.Sprintf("unexpected argument %q", stray)
	if hi > 0 {
		msg = fmt.Sprintf("unexpected argument %q (takes %s)", stray, cmd.ArgsUsage)
	} else if f := flagForValue(cmd.Flags, stray, hints); f != "" && !strings.HasPrefix(stray, "-") {
		msg += fmt.Sprintf(" (did you mean %s %s?)", f, stray)
	} else if strings.HasPrefix(stray, "-") && len(stray) > 1 {
		msg += " (flags go before --)"
	} else if b := boolFlag(cmd.Flags); b != "" && (stray == "true" || stray == "false") {
		msg += fmt.Sprintf(" (a true/false flag takes its value after =, e.g. %s=%s)", b, stray)
	}
	return errors.New(msg)
}

// checkRequired names the first required flag not given.
func checkRequired(c *cli.Context, required []cli.Flag) error {
	for _, f := range required {
		if c.IsSet(f.Names()[0]) {
			continue
		}
		if ev, ok := f.(interface{ GetEnvVars() []string }); ok && len(ev.GetEnvVars()) > 0 {
			return fmt.Errorf("%s (or $%s) is required", dashed(f.Names()[0]), ev.GetEnvVars()[0])
		}
		return fmt.Errorf("%s is required", dashed(f.Names()[0]))
	}
	return nil
}

// arity reads the argument count of a command from its ArgsUsage: no text means no arguments;
// each word is one required argument, a word in [brackets] an optional one, and a word ending in
// "..." any number.
func arity(usage string) (lo, hi int) {
	for _, w := range strings.Fields(usage) {
		if strings.HasSuffix(w, "...") || strings.HasSuffix(w, "...]") {
			return lo, int(^uint(0) >> 1)
		}
		if !strings.HasPrefix(w, "[") {
			lo++
		}
		hi++
	}
	return lo, hi
}

// unrequire clears the Required mark of flags (so that urfave/cli does not answer a missing one
// with the whole help text) and returns the flags that had it. Only string flags are unmarked: a
// required flag of another type stays urfave/cli's (bootctl has none: its TestNoFlagLeftRequired).
func unrequire(flags []cli.Flag) []cli.Flag {
	var out []cli.Flag
	for _, f := range flags {
		if sf, ok := f.(*cli.StringFlag); ok && sf.Required {
			sf.Required = false
			out = append(out, sf)
		}
	}
	return out
}

// ChoiceFlag is a string flag whose values are named ones (the mapping and multicast algorithms
// also take lists of them): its choices are data, which a stray argument is matched against, and
// its help says them in words (cmd/bootctl's TestChoicesInHelp keeps the two together).
type ChoiceFlag struct {
	cli.StringFlag
	Choices []string
	// Strict refuses any value outside Choices before the action runs (--output): the command
	// then reads the flag as it is. Flags that also take values beyond their choices (lists,
	// cyclic:LEVEL) stay unchecked here and are checked by their commands.
	Strict bool
}

// checkStrict refuses the value of a strict choice flag that is not one of its choices.
func checkStrict(c *cli.Context, flags []cli.Flag) error {
	for _, f := range flags {
		cf, ok := f.(*ChoiceFlag)
		if !ok || !cf.Strict {
			continue
		}
		if v := c.String(cf.Name); !slices.Contains(cf.Choices, v) {
			return fmt.Errorf("%s: %q is not one of %s", dashed(cf.Name), v, strings.Join(cf.Choices, ", "))
		}
	}
	return nil
}

// WithChoices is flag f with its choices.
func WithChoices(f cli.StringFlag, choices ...string) *ChoiceFlag {
	return &ChoiceFlag{StringFlag: f, Choices: choices}
}

// flagForValue names the flag that has word among its choices (--output for "json"), the flag of
// the first hint that matches word, or the flag that reads a YAML file for an existing file or *.yaml.
func flagForValue(flags []cli.Flag, word string, hints []Hint) string {
	for _, f := range flags {
		if c, ok := f.(*ChoiceFlag); ok && slices.Contains(c.Choices, word) {
			return dashed(f.Names()[0])
		}
	}
	for _, h := range hints {
		if findFlag(flags, h.Flag) != nil && h.Matches(word) {
			return dashed(h.Flag)
		}
	}
	if _, err := os.Stat(word); err == nil || strings.HasSuffix(word, ".yaml") || strings.HasSuffix(word, ".yml") {
		for _, f := range flags {
			if strings.Contains(flagUsage(f), "YAML") {
				return dashed(f.Names()[0])
			}
		}
	}
	return ""
}

// boolFlag names the first true/false flag of a command, "" if none.
func boolFlag(flags []cli.Flag) string {
	for _, f := range flags {
		if !takesValue(f) && f.Names()[0] != "help" {
			return dashed(f.Names()[0])
		}
	}
	return ""
}

func flagUsage(f cli.Flag) string {
	if u, ok := f.(cli.DocGenerationFlag); ok {
		return u.GetUsage()
	}
	return ""
}

// dashed writes a flag name as the user types it: -o, --output.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// flagUsageError rewrites a flag parsing error of urfave/cli (from Go's flag package) into one line
// that names the flag as typed, says what it expects and suggests the nearest flag name.
func flagUsageError(path string, flags []cli.Flag, err error) error {
	msg := err.Error()
	switch {
	case strings.HasPrefix(msg, "flag provided but not defined: -"):
		name := strings.TrimPrefix(msg, "flag provided but not defined: -")
		var names []string
		for _, f := range flags {
			names = append(names, f.Names()...)
		}
		if s := suggest.Nearest(name, names); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", dashed(s))
		}
	case strings.HasPrefix(msg, "flag needs an argument: -"):
		name := strings.TrimPrefix(strings.TrimPrefix(msg, "flag needs an argument: -"), "-")
		msg = dashed(name) + " needs a value"
	case strings.HasPrefix(msg, "invalid value "):
		if m := valueError(flags, msg); m != "" {
			msg = m
		}
	}
	return &UsageError{path, errors.New(msg)}
}

// valueError explains `invalid value "5" for flag -rtt: parse error` by the flag's type.
func valueError(flags []cli.Flag, msg string) string {
	rest := strings.TrimPrefix(msg, "invalid value ")
	i := strings.Index(rest, " for flag -")
	if i < 0 {
		return ""
	}
	value, err := strconv.Unquote(rest[:i])
	if err != nil {
		return ""
	}
	name, _, _ := strings.Cut(rest[i+len(" for flag -"):], ":")
	name = strings.TrimPrefix(name, "-")
	var flag cli.Flag
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			flag = f
		}
	}
	head := fmt.Sprintf("%s: %q", dashed(name), value)
	switch flag.(type) {
	case *cli.DurationFlag:
		if _, err := strconv.ParseFloat(value, 64); err == nil {
			return fmt.Sprintf("%s has no unit; write %sms or %ss (units: ns, us, ms, s, m, h)", head, value, value)
		}
		if _, err := time.ParseDuration(value); err != nil {
			return head + " is not a duration; write a number and a unit, e.g. 300ms, 2s, 1m30s"
		}
	case *cli.IntFlag, *cli.Int64Flag, *cli.UintFlag, *cli.Uint64Flag, *cli.IntSliceFlag, *cli.Int64SliceFlag, *cli.UintSliceFlag, *cli.Uint64SliceFlag:
		return head + " is not a whole number"
	case *cli.Float64Flag, *cli.Float64SliceFlag:
		return head + " is not a number"
	case *cli.BoolFlag:
		return head + " is not true or false"
	}
	return ""
}

// NormalizeArgs moves every flag where urfave/cli v2 parses it: the application's own flags
// (--log-level, --version) before the command, and every other flag after the command's name and
// before its arguments. So `bootctl plan --log-level debug`, `bootctl -o json plan`, `bootctl image
// --store S list` and `bootctl topology show sunway -o yaml` all work. A value-taking flag keeps the
// word after it; everything after "--" stays an argument. Lines that urfave/cli's completion
// built are left alone.
func NormalizeArgs(app *cli.App, args []string) []string {
	if len(args) < 2 || args[len(args)-1] == CompletionFlag {
		return args
	}
	w := argWalk{app: app, subs: app.Commands}
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] == "--" {
			w.dashdash = true
			w.pos = append(w.pos, rest[i+1:]...)
			break
		}
		if w.take(rest[i], rest[i+1:]) {
			i++ // the flag's value
		}
	}
	out := append([]string{args[0]}, w.global...)
	out = append(out, w.path...)
	out = append(out, w.flags...)
	if w.dashdash {
		out = append(out, "--")
	}
	return append(out, w.pos...)
}

// argWalk sorts the words of a command line into the application's flags, the command path, the
// command's flags and its arguments.
type argWalk struct {
	app                      *cli.App
	global, path, flags, pos []string
	leaf                     *cli.Command   // the deepest command named so far
	subs                     []*cli.Command // its subcommands
	dashdash                 bool
}

// take sorts one word, tok, given the words after it; it reports whether it also took the next word
// as a flag's value.
func (w *argWalk) take(tok string, next []string) (tookValue bool) {
	name, inline, isFlag := parseFlagToken(tok)
	if !isFlag {
		if len(w.pos) == 0 {
			if c := findCommand(w.subs, tok); c != nil {
				w.path, w.leaf, w.subs = append(w.path, tok), c, c.Subcommands
				return false
			}
		}
		w.pos = append(w.pos, tok)
		return false
	}
	f, dst := w.flagNamed(name)
	*dst = append(*dst, tok)
	if f != nil && takesValue(f) && !inline && len(next) > 0 {
		*dst = append(*dst, next[0])
		return true
	}
	return false
}

// flagNamed finds the flag called name (the command's own, then the application's, then any
// command's below) and where its words go.
func (w *argWalk) flagNamed(name string) (cli.Flag, *[]string) {
	var f cli.Flag
	if w.leaf != nil {
		f = findFlag(w.leaf.Flags, name)
	}
	if f == nil && name != "help" && name != "h" {
		if g := findFlag(w.app.Flags, name); g != nil {
			return g, &w.global
		}
	}
	if f == nil {
		f = findFlagInTree(w.subs, name)
		if w.leaf == nil {
			f = findFlagInTree(w.app.Commands, name)
		}
	}
	return f, &w.flags
}

// parseFlagToken splits -name, --name and --name=value.
func parseFlagToken(tok string) (name string, inline, ok bool) {
	if len(tok) < 2 || tok[0] != '-' {
		return "", false, false
	}
	name = strings.TrimPrefix(strings.TrimPrefix(tok, "-"), "-")
	if name == "" || name[0] == '-' {
		return "", false, false
	}
	name, _, inline = strings.Cut(name, "=")
	return name, inline, true
}

func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

func findFlag(flags []cli.Flag, name string) cli.Flag {
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// findFlagInTree finds a flag of that name on any command under cmds (to know whether it takes a
// value before the command that owns it is known).
func findFlagInTree(cmds []*cli.Command, name string) cli.Flag {
	for _, c := range cmds {
		if c.Name == "help" {
			continue // urfave/cli's help command is its own subcommand once it has run
		}
		if f := findFlag(c.Flags, name); f != nil {
			return f
		}
		if f := findFlagInTree(c.Subcommands, name); f != nil {
			return f
		}
	}
	return nil
}

func takesValue(f cli.Flag) bool {
	if v, ok := f.(interface{ TakesValue() bool }); ok {
		return v.TakesValue()
	}
	return true
}
