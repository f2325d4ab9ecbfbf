package e2e

import (
	"go/ast"
	"go/constant"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// A default is defined once: two packages may each name a DefaultX (a
// re-export such as `DefaultX = other.DefaultX` is fine), but never with
// different values, or the advisor and the service answer differently
// for one name. Same-named defaults of different things are renamed to
// say what they are.
func TestDefaultsAgreeAcrossPackages(t *testing.T) {
	const module = "github.com/hintstream/hintstream"
	pkgs := map[string]map[string][]byte{} // import path → file → source
	err := filepath.WalkDir("..", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if p != ".." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || hasGoMod(p)) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("..", filepath.Dir(p))
		ip := module
		if rel != "." {
			ip += "/" + filepath.ToSlash(rel)
		}
		if pkgs[ip] == nil {
			pkgs[ip] = map[string][]byte{}
		}
		pkgs[ip][p] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defs, err := defaultsOf(pkgs)
	if err != nil {
		t.Fatal(err)
	}
	// The scan can fail: the module defines well over a hundred defaults,
	// and some in more than one package (re-exports).
	if n := len(defs); n < 100 {
		t.Fatalf("found only %d Default* names", n)
	}
	if bad := conflictingDefaults(defs); len(bad) > 0 {
		t.Fatalf("defaults defined with different values in different packages:\n%s", strings.Join(bad, "\n"))
	}
}

// The check fails on a synthetic module where two packages disagree, and
// only there.
func TestDefaultsCheckFindsDisagreement(t *testing.T) {
	const a = "m/a"
	for _, tc := range []struct {
		name    string
		a, b    string
		offends string // "" none
	}{
		{"same literal", "const DefaultX = 5", "const DefaultX = 5", ""},
		{"re-export", "const DefaultX = 5", `import "m/a"; const DefaultX = a.DefaultX`, ""},
		{"same duration, other units", `import "time"; const DefaultT = 2 * time.Second`, `import "time"; const DefaultT = 2000 * time.Millisecond`, ""},
		{"float and integer", "const DefaultBW = 10e9", "const DefaultBW = 10_000_000_000", ""},
		{"in a const block", "const (\n\tDefaultA = 1\n\tDefaultB = 1 << 16\n)", "const (\n\tDefaultB = 1 << 20\n)", "DefaultB"},
		{"different value", "const DefaultX = 131072", "const DefaultX = 147456", "DefaultX"},
		{"different duration", `import "time"; const DefaultT = 2 * time.Second`, `import "time"; const DefaultT = 5 * time.Second`, "DefaultT"},
		{"different string", `var DefaultBucket = "x"`, `const DefaultBucket = "y"`, "DefaultBucket"},
		{"through a local constant", "const base = 4\nconst DefaultN = base * 2", "const DefaultN = 9", "DefaultN"},
		{"not a default", "const defaultX = 1", "const defaultX = 2", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defs, err := defaultsOf(map[string]map[string][]byte{
				a:     {"a/a.go": []byte("package a\n" + tc.a + "\n")},
				"m/b": {"b/b.go": []byte("package b\n" + tc.b + "\n")},
			})
			if err != nil {
				t.Fatal(err)
			}
			bad := conflictingDefaults(defs)
			if tc.offends == "" {
				if len(bad) != 0 {
					t.Fatalf("reported %q", bad)
				}
				return
			}
			if len(bad) != 1 || !strings.HasPrefix(bad[0], tc.offends+":") || !strings.Contains(bad[0], "m/a") || !strings.Contains(bad[0], "m/b") {
				t.Fatalf("reported %q, want %s in m/a and m/b", bad, tc.offends)
			}
		})
	}
}

var defaultName = regexp.MustCompile(`^Default[A-Z]`)

// defaultDef is one package's definition of a default: its value as a
// constant when it evaluates to one, else its expression's text.
type defaultDef struct {
	pkg   string
	value constant.Value
	text  string
}

func (d defaultDef) String() string {
	if d.value != nil {
		return d.pkg + " = " + d.value.ExactString()
	}
	return d.pkg + " = " + d.text
}

// defaultsOf parses every package's files and returns each Default* name
// declared at package level (const or var) with its definitions.
// Constants are evaluated, following other constants of the set and a
// few of the standard library's (time's units, math's limits).
func defaultsOf(pkgs map[string]map[string][]byte) (map[string][]defaultDef, error) {
	type spec struct {
		pkg     string
		name    string
		expr    ast.Expr
		text    string
		imports map[string]string // local name → import path
	}
	fset := token.NewFileSet()
	var specs []spec
	for ip, files := range pkgs {
		for name, src := range files {
			f, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			imports := map[string]string{}
			for _, im := range f.Imports {
				p, _ := strconv.Unquote(im.Path.Value)
				local := p[strings.LastIndex(p, "/")+1:]
				if im.Name != nil {
					local = im.Name.Name
				}
				imports[local] = p
			}
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || (gd.Tok != token.CONST && gd.Tok != token.VAR) {
					continue
				}
				for _, s := range gd.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							e := vs.Values[i]
							text := string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
							specs = append(specs, spec{ip, n.Name, e, text, imports})
						}
					}
				}
			}
		}
	}
	known := map[string]constant.Value{}
	for _, u := range []struct {
		n string
		v int64
	}{{"Nanosecond", 1}, {"Microsecond", 1e3}, {"Millisecond", 1e6}, {"Second", 1e9}, {"Minute", 60e9}, {"Hour", 3600e9}} {
		known["time."+u.n] = constant.MakeInt64(u.v)
	}
	known["math.MaxInt64"] = constant.MakeInt64(1<<63 - 1)
	known["math.MaxInt32"] = constant.MakeInt64(1<<31 - 1)
	known["math.MaxUint32"] = constant.MakeUint64(1<<32 - 1)
	var eval func(s spec, e ast.Expr) constant.Value
	eval = func(s spec, e ast.Expr) constant.Value {
		switch e := e.(type) {
		case *ast.BasicLit:
			return constant.MakeFromLiteral(e.Value, e.Kind, 0)
		case *ast.ParenExpr:
			return eval(s, e.X)
		case *ast.Ident:
			return known[s.pkg+"."+e.Name]
		case *ast.SelectorExpr:
			if x, ok := e.X.(*ast.Ident); ok {
				if p, ok := s.imports[x.Name]; ok {
					return known[p+"."+e.Sel.Name]
				}
			}
		case *ast.CallExpr: // a conversion: int64(x), time.Duration(x)
			if len(e.Args) == 1 {
				return eval(s, e.Args[0])
			}
		case *ast.UnaryExpr:
			if x := eval(s, e.X); x != nil && x.Kind() != constant.Unknown {
				return constant.UnaryOp(e.Op, x, 0)
			}
		case *ast.BinaryExpr:
			x, y := eval(s, e.X), eval(s, e.Y)
			if x == nil || y == nil || x.Kind() == constant.Unknown || y.Kind() == constant.Unknown {
				return nil
			}
			switch e.Op {
			case token.SHL, token.SHR:
				n, ok := constant.Uint64Val(y)
				if !ok {
					return nil
				}
				return constant.Shift(x, e.Op, uint(n))
			case token.QUO:
				if x.Kind() == constant.Int && y.Kind() == constant.Int {
					if constant.Sign(y) == 0 {
						return nil
					}
					return constant.BinaryOp(x, token.QUO_ASSIGN, y)
				}
			case token.EQL, token.NEQ, token.LSS, token.LEQ, token.GTR, token.GEQ:
				return constant.MakeBool(constant.Compare(x, e.Op, y))
			}
			return constant.BinaryOp(x, e.Op, y)
		}
		return nil
	}
	// Constants may refer to each other in any order: evaluate until
	// nothing more resolves.
	for progress := true; progress; {
		progress = false
		for _, s := range specs {
			key := s.pkg + "." + s.name
			if _, done := known[key]; done {
				continue
			}
			if v := eval(s, s.expr); v != nil && v.Kind() != constant.Unknown {
				known[key], progress = v, true
			}
		}
	}
	defs := map[string][]defaultDef{}
	for _, s := range specs {
		if !defaultName.MatchString(s.name) {
			continue
		}
		d := defaultDef{pkg: s.pkg, value: known[s.pkg+"."+s.name]}
		if d.value == nil {
			d.text = s.text
		}
		defs[s.name] = append(defs[s.name], d)
	}
	return defs, nil
}

// conflictingDefaults lists, one line each, the names defined in two or
// more packages with different values.
func conflictingDefaults(defs map[string][]defaultDef) []string {
	var bad []string
	for name, ds := range defs {
		differ := false
		for _, d := range ds[1:] {
			if !sameDefault(ds[0], d) {
				differ = true
			}
		}
		if differ {
			slices.SortFunc(ds, func(a, b defaultDef) int { return strings.Compare(a.pkg, b.pkg) })
			var parts []string
			for _, d := range ds {
				parts = append(parts, d.String())
			}
			bad = append(bad, name+": "+strings.Join(parts, "; "))
		}
	}
	slices.Sort(bad)
	return bad
}

func sameDefault(a, b defaultDef) bool {
	if a.value != nil && b.value != nil {
		if a.value.Kind() == constant.String || b.value.Kind() == constant.String ||
			a.value.Kind() == constant.Bool || b.value.Kind() == constant.Bool {
			return a.value.Kind() == b.value.Kind() && constant.Compare(a.value, token.EQL, b.value)
		}
		return constant.Compare(a.value, token.EQL, b.value)
	}
	return a.value == nil && b.value == nil && a.text == b.text
}

func hasGoMod(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, "go.mod"))
	return err == nil
}
