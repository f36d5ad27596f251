package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// bannedTime lists the package time functions that read the wall clock or
// start timers. time.Time, time.Duration and arithmetic stay allowed.
var bannedTime = map[string]bool{
	"Now": true, "Since": true, "Until": true, "Sleep": true, "After": true,
	"AfterFunc": true, "NewTimer": true, "NewTicker": true, "Tick": true,
}

// bannedImports are packages whose presence means I/O, logging or process
// state inside a library package.
var bannedImports = map[string]bool{
	"log": true, "log/slog": true, "net": true, "net/http": true, "os": true,
	"os/exec": true, "k8s.io/client-go/kubernetes": true,
	"k8s.io/utils/clock": true, // a PassiveClock is the caller's; we take now
}

// check reports every violation in one parsed file.
func check(fset *token.FileSet, f *ast.File) []string {
	var out []string
	report := func(n ast.Node, format string, args ...any) {
		out = append(out, fmt.Sprintf("%s: %s", fset.Position(n.Pos()), fmt.Sprintf(format, args...)))
	}
	timeName := "" // local name of package time, if imported
	klogName := "" // local name of klog: only its Logger type may be named (ToleratesTaint takes one)
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if bannedImports[path] {
			report(imp, "import of %q", path)
		}
		if path == "k8s.io/klog/v2" {
			klogName = "klog"
			if imp.Name != nil {
				klogName = imp.Name.Name
			}
		}
		if path == "time" {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			report(n, "go statement")
		case *ast.SelectStmt:
			report(n, "select statement")
		case *ast.SendStmt:
			report(n, "channel send")
		case *ast.ChanType:
			report(n, "channel type")
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && timeName != "" && id.Name == timeName && bannedTime[n.Sel.Name] {
				report(n, "use of time.%s (time is an argument: take now time.Time)", n.Sel.Name)
			}
			if id, ok := n.X.(*ast.Ident); ok && klogName != "" && id.Name == klogName && n.Sel.Name != "Logger" {
				report(n, "use of klog.%s (library packages do not log)", n.Sel.Name)
			}
		}
		return true
	})
	return out
}

// libraryFiles returns every non-test Go file of the module except examples/
// and this package.
func libraryFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() {
			switch {
			case rel == ".":
				return nil
			case rel == "examples", rel == filepath.Join("internal", "contract"),
				strings.HasPrefix(d.Name(), "."), d.Name() == "testdata":
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // nested module
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

func TestLibraryIsCallerDriven(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := libraryFiles(t, root)
	if len(files) == 0 {
		t.Fatal("no library files found; is the test run from internal/contract?")
	}
	fset := token.NewFileSet()
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		for _, v := range check(fset, f) {
			t.Error(v)
		}
	}
}

// TestCheckerCatchesViolations proves the checker is not vacuous.
func TestCheckerCatchesViolations(t *testing.T) {
	tests := []struct {
		name, src string
		want      int
	}{
		{"clean", `package p; import "time"; func f(now time.Time) time.Time { return now.Add(time.Second) }`, 0},
		{"go", `package p; func f() { go f() }`, 1},
		{"now", `package p; import "time"; func f() { _ = time.Now() }`, 1},
		{"aliased", `package p; import t "time"; func f() { t.Sleep(1) }`, 1},
		{"since-after", `package p; import "time"; func f(x time.Time) { _ = time.Since(x); <-time.After(1) }`, 2},
		{"timer-tick", `package p; import "time"; func f() { time.NewTimer(1); time.Tick(1) }`, 2},
		{"chan", `package p; func f(c chan int) { c <- 1 }`, 2},
		{"log", `package p; import "log"; func f() { log.Print() }`, 1},
		{"klog type only", `package p; import "k8s.io/klog/v2"; var l klog.Logger`, 0},
		{"klog call", `package p; import "k8s.io/klog/v2"; func f() { klog.Info(); _ = klog.Background() }`, 2},
		{"method named Now", `package p; type c struct{}; func (c) Now() {}; func f(x c) { x.Now() }`, 0},
	}
	for _, tt := range tests {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, tt.name+".go", tt.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := check(fset, f); len(got) != tt.want {
			t.Errorf("check(%s) = %q, want %d violations", tt.name, got, tt.want)
		}
	}
}

// modulePath is this module's path: a package under it with an element
// "internal" is one a user of the module cannot import.
const modulePath = "github.com/kubelifecycle/lifecycle"

// isExample reports whether fn is a runnable example as go test finds one:
// a function named Example or ExampleXxx (Xxx not starting with a lower-case
// letter), no receiver, no parameters, no results.
func isExample(fn *ast.FuncDecl) bool {
	name, ok := strings.CutPrefix(fn.Name.Name, "Example")
	if !ok || fn.Recv != nil || fn.Type.Params.NumFields() != 0 || fn.Type.Results.NumFields() != 0 {
		return false
	}
	return name == "" || !unicode.IsLower([]rune(name)[0])
}

// checkExampleImports reports the imports of this module's internal
// packages in a file that declares an Example: the Example is what a user
// copies, and the user cannot import them.
func checkExampleImports(fset *token.FileSet, f *ast.File) []string {
	var examples []string
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && isExample(fn) {
			examples = append(examples, fn.Name.Name)
		}
	}
	if len(examples) == 0 {
		return nil
	}
	var out []string
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		rest, ok := strings.CutPrefix(path, modulePath+"/")
		if ok && slices.Contains(strings.Split(rest, "/"), "internal") {
			out = append(out, fmt.Sprintf("%s: import of %q in a file with %s (an Example may use only what a user can import)", fset.Position(imp.Pos()), path, strings.Join(examples, ", ")))
		}
	}
	return out
}

// exampleFiles returns every _test.go file of the repository, nested
// modules (examples/e2e) included.
func exampleFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, "_test.go") {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// TestExamplesImportNoInternal: no file that declares an Example imports
// an internal package of this module.
func TestExamplesImportNoInternal(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := exampleFiles(t, root)
	fset := token.NewFileSet()
	examples := 0
	for _, path := range files {
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", path, err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && isExample(fn) {
				examples++
			}
		}
		for _, v := range checkExampleImports(fset, f) {
			t.Error(v)
		}
	}
	if examples == 0 {
		t.Fatalf("no Example found in %d test files; is the test run from internal/contract?", len(files))
	}
}

// TestExampleCheckerCatchesInternalImports proves checkExampleImports is
// not vacuous.
func TestExampleCheckerCatchesInternalImports(t *testing.T) {
	const internal = `"github.com/kubelifecycle/lifecycle/internal/testutil"`
	tests := []struct {
		name, src string
		want      int
	}{
		{"example, public imports", `package p_test; import ("fmt"; "github.com/kubelifecycle/lifecycle/taints"); func Example() { fmt.Println(taints.Explanation{}) }`, 0},
		{"example, internal", `package p_test; import ` + internal + `; func ExampleTracker_Observe() { _ = testutil.Epoch }`, 1},
		{"example, examples/internal", `package p_test; import "github.com/kubelifecycle/lifecycle/examples/internal/flagcheck"; func Example_loop() { flagcheck.X() }`, 1},
		{"example, aliased, two", `package p_test; import (tu ` + internal + `; "github.com/kubelifecycle/lifecycle/internal/other"); func Example() { _ = tu.Epoch; other.X() }`, 2},
		{"test only", `package p_test; import ("testing"; ` + internal + `); func TestX(t *testing.T) { _ = testutil.Epoch }`, 0},
		{"not an example: lower case", `package p_test; import ` + internal + `; func Examplefoo() { _ = testutil.Epoch }`, 0},
		{"not an example: parameter", `package p_test; import ` + internal + `; func Example(x int) { _ = testutil.Epoch }`, 0},
		{"method named Example", `package p_test; import ` + internal + `; type T struct{}; func (T) Example() { _ = testutil.Epoch }`, 0},
		{"another module's internal", `package p_test; import "k8s.io/kubernetes/pkg/internal/x"; func Example() { x.Y() }`, 0},
		{"module path prefix only", `package p_test; import "github.com/kubelifecycle/lifecycle-internal/x"; func Example() { x.Y() }`, 0},
	}
	for _, tt := range tests {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x_test.go", tt.src, 0)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got := checkExampleImports(fset, f); len(got) != tt.want {
			t.Errorf("checkExampleImports(%s) = %q, want %d violations", tt.name, got, tt.want)
		}
	}
}
