package locks

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"

	"github.com/lockcheck/lockcheck/internal/safefile"
	"github.com/redis/go-redis/v9"
)

// Every Lua script lives in its own file under scripts/<set>/, so a set can be swapped whole (an older
// Redisson's scripts) or file by file (a user's own).
//
//go:embed scripts/*/*.lua
var embedded embed.FS

// Scripts is one set of lock scripts by name (acquire, release, renew...).
type Scripts struct {
	Set    string
	byName map[string]*redis.Script
	source map[string]string
	files  map[string]string // name -> the --scripts file that replaced it
}

// ScriptSets lists the embedded sets.
func ScriptSets() []string {
	entries, _ := fs.ReadDir(embedded, "scripts")
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}

// LoadScripts returns the embedded set, with any file in overrideDir (may be "") replacing the script of
// the same name. An override must name a script the set has.
func LoadScripts(set, overrideDir string) (*Scripts, error) {
	files, err := fs.Glob(embedded, "scripts/"+set+"/*.lua")
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no script set %q (have: %s)", set, strings.Join(ScriptSets(), ", "))
	}
	s := &Scripts{Set: set, byName: map[string]*redis.Script{}, source: map[string]string{}, files: map[string]string{}}
	for _, f := range files {
		b, _ := embedded.ReadFile(f)
		s.put(strings.TrimSuffix(filepath.Base(f), ".lua"), string(b))
	}
	if overrideDir == "" {
		return s, nil
	}
	if err := safefile.Dir(overrideDir); err != nil { // else a file or a device is "no .lua files there"
		return nil, fmt.Errorf("--scripts: %w", err)
	}
	over, err := filepath.Glob(filepath.Join(overrideDir, "*.lua"))
	if err != nil || len(over) == 0 {
		return nil, fmt.Errorf("--scripts %s: no .lua files there", overrideDir)
	}
	for _, f := range over {
		name := strings.TrimSuffix(filepath.Base(f), ".lua")
		if _, ok := s.byName[name]; !ok {
			return nil, fmt.Errorf("--scripts %s: %s.lua replaces no script of set %q (have: %s)", overrideDir, name, set,
				strings.Join(s.Names(), ", "))
		}
		b, err := safefile.Read(f, safefile.SpecMax) // not a FIFO, a device or a huge file
		if err != nil {
			return nil, fmt.Errorf("--scripts: %w", err)
		}
		s.put(name, string(b))
		s.files[name] = f
		s.Set = set + "+" + overrideDir
	}
	return s, nil
}

func (s *Scripts) put(name, src string) {
	s.byName[name] = redis.NewScript(src)
	s.source[name] = src
}

// Names lists the scripts in the set.
func (s *Scripts) Names() []string {
	var out []string
	for n := range s.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Get returns a script; a missing one is a programming error in a lock that names it.
func (s *Scripts) Get(name string) *redis.Script {
	sc, ok := s.byName[name]
	if !ok {
		panic(fmt.Sprintf("script set %s has no %s.lua", s.Set, name))
	}
	return sc
}

// Source returns a script's text.
func (s *Scripts) Source(name string) string { return s.source[name] }

// CompileError is an override Redis refused to compile: bad input, named by its file.
type CompileError struct {
	File, Msg string
}

func (e *CompileError) Error() string {
	return fmt.Sprintf("--scripts %s: Redis cannot compile it: %s", e.File, e.Msg)
}

// Compile loads every override into a server (SCRIPT LOAD), so that one Redis cannot compile is refused
// before any client runs it, instead of failing every call of the run. A script Redis refuses gives a
// *CompileError; other errors are the server's (unreachable, say).
func (s *Scripts) Compile(ctx context.Context, c redis.Scripter) error {
	names := make([]string, 0, len(s.files))
	for n := range s.files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		err := c.ScriptLoad(ctx, s.source[n]).Err()
		var reply redis.Error
		if errors.As(err, &reply) {
			return &CompileError{File: s.files[n], Msg: strings.ReplaceAll(reply.Error(), "\n", " ")}
		}
		if err != nil {
			return fmt.Errorf("SCRIPT LOAD %s: %w", s.files[n], err)
		}
	}
	return nil
}
