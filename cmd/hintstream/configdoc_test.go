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

// The configuration reference is generated from the commands' own --help,
// so it cannot drift from the flag definitions: a flag added without
// regenerating fails this test.
//
//	go test ./cmd/hintstream/ -run TestConfigurationDoc -update   (make docs)
var updateDocs = flag.Bool("update", false, "rewrite docs/configuration.md from the commands' --help")

const configDocPath = "../../docs/configuration.md"

const configDocHead = `# Configuration

Generated from each command's ` + "`--help`" + ` by ` + "`make docs`" + `
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

// flagLine is the first line flag.PrintDefaults writes for a flag.
var flagLine = regexp.MustCompile(`^  -(\S+)(?: (\S+))?$`)

// renderConfigDoc renders every command's --help as a section: the
// text before the flags as it is, the flags as a table.
func renderConfigDoc(t *testing.T) string {
	var b strings.Builder
	b.WriteString(configDocHead)
	for _, cmd := range docCommands() {
		var out, errb bytes.Buffer
		if code := realMain([]string{cmd, "--help"}, &out, &errb); code != exitOK {
			t.Fatalf("hintstream %s --help: exit %d: %s", cmd, code, errb.String())
		}
		fmt.Fprintf(&b, "\n## `hintstream %s`\n\n", cmd)
		lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
		i := 0
		var text []string
		for ; i < len(lines) && !flagLine.MatchString(lines[i]); i++ {
			if strings.HasPrefix(lines[i], "Flags") {
				continue
			}
			text = append(text, lines[i])
		}
		fmt.Fprintf(&b, "```\n%s\n```\n", strings.TrimSpace(strings.Join(text, "\n")))
		if i == len(lines) {
			continue
		}
		b.WriteString("\n| flag | type | default | meaning |\n| --- | --- | --- | --- |\n")
		for i < len(lines) {
			m := flagLine.FindStringSubmatch(lines[i])
			if m == nil {
				t.Fatalf("hintstream %s --help: unexpected line %q", cmd, lines[i])
			}
			i++
			var desc []string
			for ; i < len(lines) && !flagLine.MatchString(lines[i]); i++ {
				desc = append(desc, strings.TrimSpace(lines[i]))
			}
			d := strings.Join(desc, " ")
			def := ""
			if k := strings.LastIndex(d, " (default "); k >= 0 && strings.HasSuffix(d, ")") {
				def, d = d[k+len(" (default "):len(d)-1], d[:k]
			}
			fmt.Fprintf(&b, "| `--%s` | %s | %s | %s |\n", m[1], m[2], mdCell(def), mdCell(d))
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
	// Every flag of run's --help is in the reference (the table could
	// render and still lose one to a parse slip).
	var out, errb bytes.Buffer
	realMain([]string{"run", "--help"}, &out, &errb)
	for _, l := range strings.Split(out.String(), "\n") {
		if m := flagLine.FindStringSubmatch(l); m != nil && !strings.Contains(want, "`--"+m[1]+"`") {
			t.Errorf("--%s of run --help is not in docs/configuration.md", m[1])
		}
	}
}
