package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The configuration reference is generated from the commands' own
// --help-all, so it cannot drift from the flag definitions: a flag added without
// regenerating fails this test.
//
//	go test ./cmd/hintstream/ -run TestConfigurationDoc -update   (make docs)
var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md from the commands' --help-all")

const configDocPath = "../../docs/configuration.md"

const configDocHead = `# Configuration

Generated from each command's ` + "`--help-all`" + ` by ` + "`make docs`" + `
(` + "`cmd/hintstream/configdoc_test.go`" + `, which fails when this file and the
flags disagree). Do not edit by hand.

Flags win over environment variables, which win over a YAML file given
with ` + "`--config`" + ` (on ` + "`run`" + `, ` + "`replay`" + `, ` + "`bridge`" + ` and ` + "`demo`" + `; keys are flag names:
` + "`group: prod`" + `, ` + "`requests-subjects: [llm.requests.>]`" + `; an unknown key is an error).
A flag's environment variable, where it has one, is named in its text.

Every command follows the same conventions: ` + "`--help`" + ` (or ` + "`hintstream help CMD`" + `)
prints to stdout and exits 0; a command line that cannot run (an unknown
command or flag, a value that does not parse or is out of range, a missing
required flag) exits 2; a failure at work exits 1.

On the commands with many flags, %s,
` + "`--help`" + ` shows the ones most often set, under headings, and ` + "`--help-all`" + `
every flag, under the same headings: the tables below.
`

// docCommands are the commands the overview lists, in its order.
func docCommands() []string {
	re := regexp.MustCompile(`(?m)^  hintstream ([a-z-]+)`)
	var cmds []string
	for _, m := range re.FindAllStringSubmatch(usage, -1) {
		if m[1] != "help" {
			cmds = append(cmds, m[1])
		}
	}
	return cmds
}

// flagLine is the first line flag.PrintDefaults writes for a flag: the
// name, then the value's type or the usage's back-quoted name (which may
// hold a space). A usage example in a command's text ("  --kv-events-stream
// NAME \") does not match: the name starts with a letter and the line
// does not end in a backslash.
var flagLine = regexp.MustCompile(`^  -([a-z0-9][a-z0-9-]*)(?: ([^\\]+))?$`)

// helpFlag is one flag of a --help listing.
type helpFlag struct{ name, typ, def, desc string }

// helpSection is a heading of a grouped --help (empty: an ungrouped
// command's one list) and its flags.
type helpSection struct {
	heading string
	flags   []helpFlag
}

// helpHeadings are the headings printFlags writes, as lines.
var helpHeadings = map[string]bool{}

func init() {
	for _, h := range []string{headBus, headSources, headTargets, headHints, headLimits, headOperation, headOther} {
		helpHeadings[h+":"] = true
	}
}

// parseHelp splits a command's --help or --help-all output into its text
// before the flags (without the "Flags ..." line), its sections of flags
// and the line after them (printFlags' pointer to --help-all).
func parseHelp(t *testing.T, cmd, out string) (text string, sections []helpSection, footer string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	i := 0
	var head []string
	for ; i < len(lines) && !flagLine.MatchString(lines[i]) && !helpHeadings[lines[i]]; i++ {
		if !strings.HasPrefix(lines[i], "Flags") {
			head = append(head, lines[i])
		}
	}
	for i < len(lines) {
		switch l := lines[i]; {
		case l == "":
			i++
			continue
		case helpHeadings[l]:
			sections = append(sections, helpSection{heading: strings.TrimSuffix(l, ":")})
			i++
			continue
		case !flagLine.MatchString(l):
			if i == len(lines)-1 {
				return strings.TrimSpace(strings.Join(head, "\n")), sections, l
			}
			t.Fatalf("hintstream %s: unexpected line %q", cmd, l)
		}
		if len(sections) == 0 {
			sections = append(sections, helpSection{})
		}
		m := flagLine.FindStringSubmatch(lines[i])
		i++
		var desc []string
		for ; i < len(lines) && strings.HasPrefix(lines[i], "    \t"); i++ {
			desc = append(desc, strings.TrimSpace(lines[i]))
		}
		d := strings.Join(desc, " ")
		def := ""
		if k := strings.LastIndex(d, " (default "); k >= 0 && strings.HasSuffix(d, ")") {
			def, d = d[k+len(" (default "):len(d)-1], d[:k]
		}
		sec := &sections[len(sections)-1]
		sec.flags = append(sec.flags, helpFlag{name: m[1], typ: m[2], def: def, desc: d})
	}
	return strings.TrimSpace(strings.Join(head, "\n")), sections, ""
}

// helpOutput is realMain's stdout for args, which must exit 0.
func helpOutput(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := realMain(args, &out, &errb); code != exitOK {
		t.Fatalf("hintstream %q: exit %d: %s", args, code, errb.String())
	}
	return out.String()
}

// renderConfigDoc renders every command's --help-all as a section: the
// text before the flags as it is, the flags as a table under each of
// their headings, those --help shows in bold.
func renderConfigDoc(t *testing.T) string {
	var b strings.Builder
	var grouped []string
	for _, cmd := range docCommands() {
		if _, ok := flagGroups[cmd]; ok {
			grouped = append(grouped, "`"+cmd+"`")
		}
	}
	fmt.Fprintf(&b, configDocHead, strings.Join(grouped, ", "))
	for _, cmd := range docCommands() {
		text, sections, _ := parseHelp(t, cmd, helpOutput(t, cmd, "--help-all"))
		fmt.Fprintf(&b, "\n## `hintstream %s`\n\n```\n%s\n```\n", cmd, text)
		short := map[string]bool{}
		if _, grouped := flagGroups[cmd]; grouped {
			_, s, _ := parseHelp(t, cmd, helpOutput(t, cmd, "--help"))
			for _, sec := range s {
				for _, f := range sec.flags {
					short[f.name] = true
				}
			}
			fmt.Fprintf(&b, "\n`hintstream %s --help` shows the flags in bold, under the same headings; `--help-all` shows every one.\n", cmd)
		}
		for _, sec := range sections {
			if sec.heading != "" {
				fmt.Fprintf(&b, "\n### %s\n", sec.heading)
			}
			b.WriteString("\n| flag | type | default | meaning |\n| --- | --- | --- | --- |\n")
			for _, f := range sec.flags {
				name := "`--" + f.name + "`"
				if short[f.name] {
					name = "**" + name + "**"
				}
				fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", name, mdCell(f.typ), mdCell(f.def), mdCell(f.desc))
			}
		}
	}
	return b.String()
}

func mdCell(s string) string {
	if s == "" {
		return ""
	}
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "<", "&lt;")
}

func TestConfigurationDoc(t *testing.T) {
	want := renderConfigDoc(t)
	if *updateDocs {
		if err := os.WriteFile(configDocPath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(configDocPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("docs/configuration.md does not match the commands' --help; run `make docs`")
	}
	// Every flag of run's --help-all is in the reference (the table could
	// render and still lose one to a parse slip).
	for _, l := range strings.Split(helpOutput(t, "run", "--help-all"), "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil && !strings.Contains(want, "`--"+m[1]+"`") {
			t.Errorf("--%s of run --help-all is not in docs/configuration.md", m[1])
		}
	}
}
