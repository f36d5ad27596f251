package contract

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
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
