package suite

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Merge gathers every suite.json found under dirs (shards, repeats, machines) into one report in out, with
// the kept run directories copied beside it, and writes suite.json and the suite page there.
func Merge(out string, dirs []string) (*Report, error) {
	absOut, _ := filepath.Abs(out)
	var found []string
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return nil, err
		}
		err := filepath.WalkDir(d, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if abs, _ := filepath.Abs(p); e.IsDir() && abs == absOut {
				return filepath.SkipDir
			}
			if !e.IsDir() && e.Name() == "suite.json" {
				found = append(found, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("no suite.json under %s", strings.Join(dirs, ", "))
	}
	sort.Strings(found)
	if err := os.MkdirAll(filepath.Join(out, "runs"), 0o755); err != nil {
		return nil, err
	}
	m := &Report{}
	var names, shards []string
	taken := map[string]bool{}
	for _, p := range found {
		r, err := ReadReport(p)
		if err != nil {
			return nil, err
		}
		if m.Started.IsZero() || r.Started.Before(m.Started) {
			m.Started = r.Started
		}
		m.Seconds += r.Seconds
		if !slices.Contains(names, r.Name) {
			names = append(names, r.Name)
		}
		if r.Shard != "" {
			shards = append(shards, r.Shard)
		}
		if r.Stopped != "" {
			m.Stopped = strings.TrimPrefix(m.Stopped+"; ", "; ") + r.Stopped
		}
		for _, o := range r.Outcomes {
			if o.Dir != "" {
				src := filepath.Join(filepath.Dir(p), o.Dir)
				rel := filepath.Join("runs", filepath.Base(filepath.Dir(o.Dir)), filepath.Base(o.Dir))
				for i := 2; taken[rel]; i++ {
					rel = filepath.Join("runs", fmt.Sprintf("%s-%d", filepath.Base(filepath.Dir(o.Dir)), i), filepath.Base(o.Dir))
				}
				taken[rel] = true
				if err := copyTree(src, filepath.Join(out, rel)); err != nil {
					return nil, err
				}
				o.Dir = rel
			}
			m.Outcomes = append(m.Outcomes, o)
		}
	}
	m.Name = strings.Join(names, "+")
	m.Shard = strings.Join(shards, ",")
	sort.SliceStable(m.Outcomes, func(i, j int) bool { return m.Outcomes[i].ID < m.Outcomes[j].ID })
	if err := m.Write(out); err != nil {
		return nil, err
	}
	return m, WritePage(out, m)
}

// copyTree copies a run directory (regular files and folders; a run holds nothing else worth keeping).
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		to := filepath.Join(dst, rel)
		switch {
		case e.IsDir():
			return os.MkdirAll(to, 0o755)
		case e.Type().IsRegular():
			return copyFile(p, to)
		}
		return nil
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
