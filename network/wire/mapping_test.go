package wire

import (
	goparser "go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestLockOfQueue(t *testing.T) {
	for q, name := range map[string]string{"redisson_lock_queue:{F}": "F", "redisson_lock_queue:a{b}c": "a{b}c"} {
		if got := lockOfQueue(q); got != name {
			t.Fatalf("lockOfQueue(%q) = %q", q, got)
		}
	}
}

// The proxy layer knows RESP and the shapes of lock scripts, no lock: each library registers its scripts
// from its own package (RegisterLibrary), so this package imports nothing of locks/ or kinds/.
func TestImportsNoLock(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := goparser.ParseFile(token.NewFileSet(), f, nil, goparser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, up := range []string{"/locks", "/kinds", "/lockspec", "/workloads", "/runner"} {
				if p := "github.com/lockcheck/lockcheck" + up; path == p || strings.HasPrefix(path, p+"/") {
					t.Errorf("%s imports %s", f, path)
				}
			}
		}
	}
}
