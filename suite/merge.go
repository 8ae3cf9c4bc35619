package suite

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/internal/safefile"
)

// Merge gathers every suite.json found under dirs (shards, repeats, machines) into one report in out, with
// the kept run directories copied beside it, and writes suite.json and the suite page there.
//
// A shard may be an artifact of a job a pull request ran, so nothing in it is trusted: each suite.json is
// read inside its own directory (an os.Root: neither ".." nor a symlink leads out), an outcome's dir must
// be a real directory under that directory's runs/ (no "..", no symlink on the way) named by no other
// outcome, only regular files and directories are copied, with their modes kept or narrowed, never
// widened, and every write goes through an os.Root on out. Every suite.json and every dir is checked
// before anything is written. The same directory given twice, or one input inside another, is refused:
// its runs would be counted twice.
func Merge(out string, dirs []string) (*Report, error) {
	ins, err := resolveInputs(dirs)
	defer func() {
		for _, in := range ins {
			in.root.Close()
		}
	}()
	if err != nil {
		return nil, err
	}
	if err := outApart(out, ins); err != nil {
		return nil, err
	}
	var shards []shard
	for _, in := range ins {
		s, err := in.shards()
		if err != nil {
			return nil, err
		}
		shards = append(shards, s...)
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("no suite.json under %s", strings.Join(dirs, ", "))
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].shown < shards[j].shown })

	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	if err := RunsDir(out); err != nil {
		return nil, err
	}
	dst, err := os.OpenRoot(out)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	outInfo, err := os.Stat(out)
	if err != nil {
		return nil, err
	}
	c := copier{dst: dst, out: outInfo}
	m := &Report{}
	var names, shardNames []string
	var taken places
	for _, s := range shards {
		r := s.rep
		if m.Started.IsZero() || r.Started.Before(m.Started) {
			m.Started = r.Started
		}
		m.Seconds += r.Seconds
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
		if r.Shard != "" {
			shardNames = append(shardNames, r.Shard)
		}
		if r.Stopped != "" {
			m.Stopped = strings.TrimPrefix(m.Stopped+"; ", "; ") + r.Stopped
		}
		for _, o := range r.Outcomes {
			if o.Dir != "" {
				from := path.Clean(filepath.ToSlash(o.Dir)) // checked by shards: runs/CASE[/...]
				parts := strings.Split(from, "/")
				to := from
				for i := 2; taken.clash(to); i++ {
					to = path.Join(append([]string{"runs", fmt.Sprintf("%s-%d", parts[1], i)}, parts[2:]...)...)
				}
				taken.take(to)
				if err := c.copyRun(s, from, to); err != nil {
					return nil, fmt.Errorf("merge: %s: run %q: %w", s.shown, o.ID, err)
				}
				o.Dir = filepath.FromSlash(to)
			}
			m.Outcomes = append(m.Outcomes, o)
		}
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	m.Name = strings.Join(names, "+")
	m.Shard = strings.Join(shardNames, ",")
	sort.SliceStable(m.Outcomes, func(i, j int) bool { return m.Outcomes[i].ID < m.Outcomes[j].ID })
	if err := m.Write(out); err != nil {
		return nil, err
	}
	return m, WritePage(out, m)
}

// places are the run directories taken in out: a new one may be neither one of them, nor inside one, nor
// hold one (a shard's runs/CASE beside another's runs/CASE/RUN).
type places struct{ taken, held map[string]bool }

func (p *places) clash(to string) bool {
	if p.held[to] {
		return true
	}
	for d := to; d != "." && d != "/"; d = path.Dir(d) {
		if p.taken[d] {
			return true
		}
	}
	return false
}

func (p *places) take(to string) {
	if p.taken == nil {
		p.taken, p.held = map[string]bool{}, map[string]bool{}
	}
	p.taken[to] = true
	for d := path.Dir(to); d != "." && d != "/"; d = path.Dir(d) {
		p.held[d] = true
	}
}

// input is one directory merge was given, opened as a root nothing read from it may leave.
type input struct {
	given string
	real  string // absolute, symlinks resolved
	root  *os.Root
}

// shard is one suite.json found under an input.
type shard struct {
	in    input
	dir   string // its directory, relative to the input's root (slash-separated)
	shown string // its path as the user would write it, for messages
	rep   *Report
}

// resolveInputs opens each input, refusing one given twice (however spelled: symlinks and ".." are
// resolved, and the directories compared) and one inside another.
func resolveInputs(dirs []string) ([]input, error) {
	var ins []input
	var reals []string
	var infos []os.FileInfo
	for _, d := range dirs {
		real, err := filepath.EvalSymlinks(d)
		if err == nil {
			real, err = filepath.Abs(real)
		}
		var fi os.FileInfo
		if err == nil {
			fi, err = os.Stat(real)
		}
		if err != nil {
			return ins, fmt.Errorf("merge: %w", err)
		}
		if !fi.IsDir() {
			return ins, fmt.Errorf("merge: %s is not a directory", d)
		}
		for i, r := range reals {
			switch {
			case os.SameFile(fi, infos[i]):
				return ins, fmt.Errorf("merge: %s and %s are the same directory: its runs would be counted twice", ins[i].given, d)
			case within(r, real):
				return ins, fmt.Errorf("merge: %s is inside %s: its runs would be counted twice", d, ins[i].given)
			case within(real, r):
				return ins, fmt.Errorf("merge: %s is inside %s: its runs would be counted twice", ins[i].given, d)
			}
		}
		root, err := os.OpenRoot(real)
		if err != nil {
			return ins, fmt.Errorf("merge: %w", err)
		}
		ins = append(ins, input{given: d, real: real, root: root})
		reals, infos = append(reals, real), append(infos, fi)
	}
	return ins, nil
}

// outApart refuses an --out that is an input, is inside one or holds one: the merged suite.json would sit
// beside the runs it counts, and a later merge of that directory would count them twice.
func outApart(out string, ins []input) error {
	real, err := realPath(out)
	if err != nil {
		return fmt.Errorf("merge: --out %s: %w", out, err)
	}
	for _, in := range ins {
		switch {
		case real == in.real:
			return fmt.Errorf("merge: --out %s is the input %s itself: give --out a directory outside every input", out, in.given)
		case within(in.real, real):
			return fmt.Errorf("merge: --out %s is inside the input %s: a later merge of %s would count its runs twice; give --out a directory outside every input",
				out, in.given, in.given)
		case within(real, in.real):
			return fmt.Errorf("merge: --out %s holds the input %s: a later merge of %s would count its runs twice; give --out a directory outside every input",
				out, in.given, out)
		}
	}
	return nil
}

// realPath is p absolute with its symlinks resolved, also when its last elements do not exist yet.
func realPath(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var missing []string
	for {
		real, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{real}, missing...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || filepath.Dir(p) == p {
			return "", err
		}
		missing = append([]string{filepath.Base(p)}, missing...)
		p = filepath.Dir(p)
	}
}

// within reports whether p is dir or under it.
func within(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(r)
}

// shards finds and reads every suite.json under the input and checks every run directory they name.
func (in input) shards() ([]shard, error) {
	var found []string
	err := fs.WalkDir(in.root.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !e.IsDir() && e.Name() == "suite.json" { // whatever it is: reading it decides
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("merge: %s: %w", in.given, err)
	}
	var all []shard
	for _, p := range found {
		s := shard{in: in, dir: path.Dir(p), shown: filepath.Join(in.given, filepath.FromSlash(p))}
		if err := s.read(); err != nil {
			return nil, fmt.Errorf("merge: %s: %w", s.shown, err)
		}
		all = append(all, s)
	}
	return all, nil
}

// read reads the shard's suite.json inside its own directory and checks that each outcome's dir is a
// real directory under that directory's runs/, and no other outcome's.
func (s *shard) read() error {
	root, err := s.in.root.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	b, err := safefile.ReadIn(root, "suite.json", safefile.ResultsMax)
	if err != nil {
		return unwrapPath(err) // the message names suite.json already
	}
	if s.rep, err = decodeReport(b); err != nil {
		return err
	}
	var named places // one run directory named twice would be copied twice (a small shard made huge)
	for _, o := range s.rep.Outcomes {
		if o.Dir == "" {
			continue
		}
		if err := runPath(o.Dir); err != nil {
			return fmt.Errorf("run %q: %w", o.ID, err)
		}
		p := path.Clean(filepath.ToSlash(o.Dir))
		if named.clash(p) {
			return fmt.Errorf("run %q: dir %q is another run's too", o.ID, o.Dir)
		}
		named.take(p)
		// Every step a real directory: a symlink could alias another run's directory (one run copied many
		// times) or lead out of the shard.
		for d := p; d != "."; d = path.Dir(d) {
			fi, err := root.Lstat(d)
			if err != nil {
				return fmt.Errorf("run %q: dir %q: %w", o.ID, o.Dir, unwrapPath(err))
			}
			if !fi.IsDir() {
				return fmt.Errorf("run %q: dir %q: %s is not a directory (%s)", o.ID, o.Dir, d, kindOf(fi.Mode()))
			}
		}
	}
	return nil
}

// kindOf names what a path is, for a refusal.
func kindOf(m fs.FileMode) string {
	if m&fs.ModeSymlink != 0 {
		return "a symlink, not followed"
	}
	return "mode " + m.String()
}

// runPath checks a dir from a suite.json: a relative path under runs/, as Run writes them.
func runPath(d string) error {
	p := filepath.ToSlash(d)
	if !filepath.IsLocal(d) || !strings.HasPrefix(path.Clean(p), "runs/") {
		return fmt.Errorf("dir %q is not a directory under the shard's runs/", d)
	}
	return nil
}

// unwrapPath drops the path an *fs.PathError repeats (the message names it already), keeping the cause.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// copier copies run directories into out, keeping modes: each directory is made 0700 and given its own
// mode (narrowed as keep says) only once everything under it is written.
type copier struct {
	dst   *os.Root
	out   os.FileInfo // never copied into itself, when out is inside a run directory
	modes []dirMode
}

type dirMode struct {
	name string
	mode fs.FileMode
}

// keep is the mode a copy gets: the source's permission bits, without group or other write (and never a
// setuid, setgid or sticky bit), so a copy is never more open than its source.
func keep(m fs.FileMode) fs.FileMode { return m.Perm() & 0o755 }

// copyRun copies the run directory from (under the shard's directory) to to (under out): its ancestors
// below runs/ take the modes of theirs, then the tree is copied. to is replaced if an earlier merge left it.
func (c *copier) copyRun(s shard, from, to string) error {
	root, err := s.in.root.OpenRoot(s.dir)
	if err != nil {
		return err
	}
	defer root.Close()
	fromParts, toParts := strings.Split(from, "/"), strings.Split(to, "/")
	for i := 2; i < len(toParts); i++ {
		name := path.Join(toParts[:i]...)
		if _, err := c.dst.Lstat(name); err == nil {
			continue
		}
		fi, err := root.Stat(path.Join(fromParts[:i]...))
		if err != nil {
			return err
		}
		if err := c.mkdir(name, fi.Mode()); err != nil {
			return err
		}
	}
	if err := c.dst.RemoveAll(to); err != nil {
		return err
	}
	src, err := root.OpenRoot(from)
	if err != nil {
		return err
	}
	defer src.Close()
	return fs.WalkDir(src.FS(), ".", func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := path.Join(to, p)
		switch {
		case e.IsDir():
			fi, err := e.Info()
			if err != nil {
				return err
			}
			if os.SameFile(fi, c.out) {
				return fs.SkipDir
			}
			return c.mkdir(name, fi.Mode())
		case e.Type().IsRegular():
			return c.copyFile(src, p, name)
		}
		return nil // a symlink is not followed (it may point anywhere), nor is a FIFO or a device read
	})
}

func (c *copier) mkdir(name string, mode fs.FileMode) error {
	if err := c.dst.Mkdir(name, 0o700); err != nil {
		return err
	}
	c.modes = append(c.modes, dirMode{name, keep(mode)})
	return nil
}

func (c *copier) copyFile(src *os.Root, from, to string) error {
	in, fi, err := safefile.OpenIn(src, from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := c.dst.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, keep(fi.Mode()))
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// finish gives the directories their modes, the deepest first (a directory without write permission
// would refuse what goes under it).
func (c *copier) finish() error {
	for i := len(c.modes) - 1; i >= 0; i-- {
		if err := c.dst.Chmod(c.modes[i].name, c.modes[i].mode); err != nil {
			return err
		}
	}
	return nil
}
