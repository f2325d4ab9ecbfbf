package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	"github.com/hintstream/hintstream/internal/cmdline"
)

// Exit statuses, as most Unix tools use them: 2 is reserved for a command
// line that cannot be run at all (unknown command or flag, a value that
// does not parse or is out of range), so a script can tell "you called
// me wrongly" from "I tried and failed" (1).
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

// errUsage marks an error in the command line itself (see exitUsage).
var errUsage = errors.New("usage error")

// usageError is err marked with errUsage; its message is err's alone.
type usageError struct{ err error }

func (e usageError) Error() string   { return e.err.Error() }
func (e usageError) Unwrap() []error { return []error{errUsage, e.err} }

func asUsage(err error) error { return usageError{err} }

// usagef is a usage error with fmt.Errorf's message.
func usagef(format string, a ...any) error { return asUsage(fmt.Errorf(format, a...)) }

func isHelp(err error) bool { return errors.Is(err, flag.ErrHelp) }

// exitCode is the exit status for a command's error.
func exitCode(err error) int {
	switch {
	case err == nil, isHelp(err):
		return exitOK
	case errors.Is(err, errUsage):
		return exitUsage
	}
	return exitFail
}

// usageUntil marks the error *err as a usage error unless *checked: a
// command defers it first thing and sets checked once its flags are
// parsed and validated, so every earlier failure (a bad value, a missing
// flag, a stray argument) exits 2 and every later one (the bus is down)
// exits 1.
func usageUntil(checked *bool, err *error) {
	if !*checked && *err != nil && !isHelp(*err) && !errors.Is(*err, errUsage) {
		*err = asUsage(*err)
	}
}

// parseArgs parses args into fs. -h/--help prints fs's usage to stdout
// and returns flag.ErrHelp (exit 0). A parse error (unknown flag, a value
// that does not parse) is printed to stderr with a pointer to --help and
// returned as a usage error; the whole flag list would bury it. A
// removed flag fails the same way, naming why (removed.go).
func parseArgs(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var buf bytes.Buffer
	fs.SetOutput(&buf) // the flag package writes the error and the usage here
	err := removedFlagInArgs(fs, args)
	if err == nil {
		err = fs.Parse(args)
	}
	fs.SetOutput(stderr)
	switch {
	case err == nil:
		return nil
	case isHelp(err):
		fs.SetOutput(stdout)
		fs.Usage()
		fs.SetOutput(stderr)
		return err
	case err.Error() == errHelpAll:
		fs.SetOutput(everyFlag{stdout})
		fs.Usage()
		fs.SetOutput(stderr)
		return flag.ErrHelp
	}
	fmt.Fprintf(stderr, "hintstream %s: %v\nRun \"hintstream %s --help\" for its flags.\n", fs.Name(), err, fs.Name())
	return asUsage(errReported{err})
}

// errHelpAll is the flag package's error for --help-all, which parseArgs
// answers as -h, with every flag where --help shows the short list (see
// printFlags). It is no flag of any command, so that the parse stops at
// it as at -h (a later flag cannot fail) and a config file cannot name it.
const errHelpAll = "flag provided but not defined: -help-all"

// usageHeader sets fs.Usage to head followed by the flag list.
func usageHeader(fs *flag.FlagSet, head string) {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "%s\n\nFlags (default in brackets):\n", head)
		printFlags(fs)
	}
}

// errReported is an error already printed; realMain does not print it again.
type errReported struct{ err error }

func (e errReported) Error() string { return e.err.Error() }
func (e errReported) Unwrap() error { return e.err }

// buildVersion is the module version and VCS revision the binary was
// built from: "v1.2.3 (revision abc123, modified)" from a tagged module,
// "(devel) (revision …)" from a checkout, "unknown" without build info
// (a binary built without module support).
func buildVersion(info *debug.BuildInfo, ok bool) string {
	if !ok || info == nil {
		return "unknown"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, when string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		rev = "unknown"
	}
	extra := []string{"revision " + rev}
	if when != "" {
		extra = append(extra, when)
	}
	if modified {
		extra = append(extra, "modified")
	}
	return fmt.Sprintf("%s (%s, %s)", v, strings.Join(extra, ", "), info.GoVersion)
}

// versionCmd prints "hintstream <version>" (see buildVersion).
func versionCmd(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: hintstream version\n\nPrints the module version and VCS revision the binary was built from.\n")
	}
	if err := parseArgs(fs, args, stdout, stderr); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected arguments %q", fs.Args())
	}
	info, ok := debug.ReadBuildInfo()
	fmt.Fprintf(stdout, "hintstream %s\n", buildVersion(info, ok))
	return nil
}

// natsURLEnv is the default of every --nats-url: HINTSTREAM_NATS_URL,
// else NATS_URL (the variable the nats CLI and most NATS clients read),
// else def. The flag wins over both.
func natsURLEnv(def string) string { return cmdline.NATSURLEnv(def) }

// natsURLUsage is every --nats-url's help text, after what.
const natsURLUsage = cmdline.NATSURLUsage
