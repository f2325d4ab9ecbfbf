package main

import (
	"flag"
	"fmt"
	"strings"
)

// removedFlags are flags that no command has any more, each with why
// and the record that says so. Every command's parseArgs and --config
// consult it, so that an old command line or config file fails naming
// the record instead of with "flag provided but not defined".
var removedFlags = map[string]string{
	"prefetch-ahead":          headerFreeRemoved,
	"prefetch-ahead-contexts": headerFreeRemoved,
	"prefetch-ahead-warmup":   headerFreeRemoved,
	"max-prefetch-waste":      headerFreeRemoved,
	// The retention planner and its group (ADR 0013).
	"l3-pin-budget":             plannerRemoved,
	"l3-capacity":               plannerRemoved,
	"retention-horizon":         plannerRemoved,
	"retention-interval":        plannerRemoved,
	"retention-min-probability": plannerRemoved,
	"retention-group":           plannerRemoved,
	"retention-lock-ttl":        plannerRemoved,
	"retention-member":          plannerRemoved,
}

// removedCommands are sub-commands removed the same way ("inspect WHAT").
var removedCommands = map[string]string{
	"inspect ahead":     headerFreeRemoved,
	"inspect retention": plannerRemoved,
}

const plannerRemoved = "the retention planner saved less than today's pins with affinity on the workloads measured, and the tool-call pins are hintstream's one retention mechanism (docs/adr/0013-one-retention-mechanism.md)"

const headerFreeRemoved = "header-free prefetch sent no prefetch on any workload with wake-ups, and where none announced a turn it wasted more than it used (docs/adr/0012-no-header-free-prefetch.md)"

// removedFlagError is the error for name (a flag name without dashes)
// when it is a removed flag fs does not define; nil otherwise.
func removedFlagError(fs *flag.FlagSet, name string) error {
	why, ok := removedFlags[name]
	if !ok || fs.Lookup(name) != nil {
		return nil
	}
	return fmt.Errorf("flag --%s was removed: %s", name, why)
}

// removedFlagInArgs finds the first removed flag in args, reading them
// as fs.Parse would: flags up to the first argument that is not one (or
// "--"), a defined non-boolean flag without "=" taking the next argument
// as its value.
func removedFlagInArgs(fs *flag.FlagSet, args []string) error {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			return nil
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		if (name == "h" || name == "help") && fs.Lookup(name) == nil {
			return nil // fs.Parse stops here too
		}
		if err := removedFlagError(fs, name); err != nil {
			return err
		}
		if f := fs.Lookup(name); f != nil && !hasValue && !isBoolFlag(f) {
			i++ // its value
		}
	}
	return nil
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
