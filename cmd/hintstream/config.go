package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// envInUsage finds the environment variables a flag's usage names; flags
// backed by them say "(env NAME" or "(env NAME, else OTHER" in their usage.
var envInUsage = regexp.MustCompile(`\(env ([A-Z0-9_]+)(?:, else ([A-Z0-9_]+))?`)

// applyConfigFile sets, from a YAML map of flag names to values, every
// flag that the command line did not set and whose environment variable
// is unset: flags win over the environment, which wins over the file,
// which wins over the defaults. A key that names no flag is an error, so
// a typo does not pass silently. Lists become comma-separated values.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	b, err := readConfigFile(path)
	if err != nil {
		return err
	}
	var values map[string]any
	if err := yaml.Unmarshal(b, &values); err != nil {
		return fmt.Errorf("--config %s: %w", path, err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, v := range values {
		if err := removedFlagError(fs, name); err != nil {
			return fmt.Errorf("--config %s: %w", path, err)
		}
		f := fs.Lookup(name)
		if f == nil {
			return fmt.Errorf("--config %s: %q is not a flag of this command", path, name)
		}
		if set[name] {
			continue
		}
		if envSet(envInUsage.FindStringSubmatch(f.Usage)) {
			continue
		}
		val, err := configValue(v)
		if err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, name, err)
		}
		if err := fs.Set(name, val); err != nil {
			return fmt.Errorf("--config %s: %s: %w", path, name, err)
		}
	}
	return nil
}

// maxConfigBytes bounds a --config file. Every flag of every command
// with a long value fits in a few KiB; a bigger file is a mistake (or an
// attack), and YAML decodes it into about 40 times its size (a 110 MB
// list: 4.7 GB, 17 s), so it is refused before it is parsed.
const maxConfigBytes = 1 << 20

// ErrConfigTooLarge marks a --config file over maxConfigBytes.
var ErrConfigTooLarge = errors.New("config file too large")

// readConfigFile reads at most maxConfigBytes of path, and fails if there
// is more: a LimitReader, so /dev/zero or a growing file cannot make it
// read on.
func readConfigFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	if len(b) > maxConfigBytes {
		return nil, fmt.Errorf("--config %s: %w: more than %d bytes (a config file maps flag names to values)", path, ErrConfigTooLarge, maxConfigBytes)
	}
	return b, nil
}

// envSet reports whether one of the variables envInUsage matched is set
// to something: an empty variable counts as unset, as in env.
func envSet(m []string) bool {
	for _, name := range m[min(len(m), 1):] {
		if v, ok := os.LookupEnv(name); ok && name != "" && v != "" {
			return true
		}
	}
	return false
}

// configValue turns a YAML value into a flag's text. Every flag takes a
// scalar or a list of scalars: a map (group: {team: a}) is an error, not
// the text "map[team:a]", which a flag would take as a name.
func configValue(v any) (string, error) {
	switch x := v.(type) {
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			if !scalar(e) {
				return "", fmt.Errorf("list item %d is a %s; want a string, number or boolean", i, yamlKind(e))
			}
			parts[i] = fmt.Sprint(e)
		}
		return strings.Join(parts, ","), nil
	case nil:
		return "", nil
	}
	if !scalar(v) {
		return "", fmt.Errorf("value is a %s; want a string, number, boolean or list", yamlKind(v))
	}
	return fmt.Sprint(v), nil
}

func scalar(v any) bool {
	switch v.(type) {
	case string, bool, int, int64, uint64, float64, time.Time:
		return true
	}
	return false
}

func yamlKind(v any) string {
	switch v.(type) {
	case map[string]any, map[any]any:
		return "map"
	case []any:
		return "list"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// configFlag registers --config on fs; the returned func applies the file
// (if any) once the command line is parsed.
func configFlag(fs *flag.FlagSet) func() error {
	path := fs.String("config", env("HINTSTREAM_CONFIG", ""), "YAML file of flag names to values (env HINTSTREAM_CONFIG); flags and environment win over it")
	return func() error {
		if *path == "" {
			return nil
		}
		return applyConfigFile(fs, *path)
	}
}
