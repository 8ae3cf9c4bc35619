package lockspec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/lockcheck/lockcheck/internal/prose"
	"github.com/lockcheck/lockcheck/internal/safefile"
)

// scriptFiles reads a spec's file: scripts inside the spec's directory. The directory is an os.Root, so
// neither an absolute path, nor "..", nor a symlink leads out of it: a spec from a pull request cannot
// make lockcheck read a file of the machine it runs on and show it in an error or a page.
type scriptFiles struct {
	dir  string // "" refuses file: scripts
	root *os.Root
}

// read returns the script file name and the path it is known by; an error is one line saying "file NAME: ...".
func (f *scriptFiles) read(name string) ([]byte, string, error) {
	bad := func(err error) ([]byte, string, error) { return nil, "", fmt.Errorf("file %s: %v", name, err) }
	switch {
	case f.dir == "":
		return bad(errors.New("scripts in files are not allowed here"))
	case !filepath.IsLocal(name):
		return bad(fmt.Errorf("not a path inside the spec's directory %s (want a relative path, with no ..)", f.dir))
	}
	if f.root == nil {
		r, err := os.OpenRoot(f.dir)
		if err != nil {
			return bad(err)
		}
		f.root = r
	}
	p := filepath.Join(f.dir, name)
	b, err := safefile.ReadIn(f.root, name, safefile.SpecMax)
	var pe *fs.PathError
	switch {
	case errors.As(err, &pe): // said as the plain open it stands for, with the path the user can look at
		return bad(&fs.PathError{Op: "open", Path: p, Err: pe.Err})
	case err != nil: // safefile's own refusals already start with the name
		return nil, "", fmt.Errorf("file %v", err)
	}
	return b, p, nil
}

func (f *scriptFiles) close() {
	if f.root != nil {
		f.root.Close()
	}
}

// maxProse bounds the spec's free texts (about:, control: why:), which every run prints and records.
const maxProse = prose.Max

// printable makes a free text of the spec one line and refuses one that is too long or holds a control
// character (prose.Line: a schedule's about: is refused alike).
func printable(field string, s *string) (err error) {
	*s, err = prose.Line(field, *s, maxProse)
	return err
}
