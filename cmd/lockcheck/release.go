package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/clients/worker"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/spf13/cobra"
)

// version is the release's, set by the release build (-ldflags "-X main.version=v1.2.3"); a build from a
// checkout says "dev" and its commit.
var version = "dev"

// commit is set by the release build too, for builds without VCS stamping (-buildvcs=false, a tarball).
var commit = "unknown"

// Every run records the version this binary reports (results.json's "lockcheck"), not "dev".
func init() { stampRunner() }

func stampRunner() {
	ver, rev, _ := buildFacts()
	runner.Stamp(ver, rev)
}

// buildFacts are the version, the commit (with "+dirty" for a modified tree) and the Go that built this
// binary, from -ldflags and the build info go stamps in.
func buildFacts() (ver, rev, goVersion string) {
	ver, rev, goVersion = version, commit, runtime.Version()
	if bi, ok := debug.ReadBuildInfo(); ok {
		if ver == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" { // go install module@vX
			ver = bi.Main.Version
		}
		var dirty bool
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
		if dirty && rev != "unknown" {
			rev += "+dirty"
		}
	}
	return ver, rev, goVersion
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lockcheck's version, commit and Go, and the library version each shipped worker builds by default",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			ver, commit, gov := buildFacts()
			fmt.Printf("lockcheck %s\ncommit    %s\ngo        %s\n", ver, commit, gov)
			for _, name := range worker.Names() {
				s, v, err := worker.Lookup(name)
				if err != nil {
					v = "? (" + oneLine(err) + ")"
				}
				if s.Broken != "" {
					continue // the controls build the reference worker's one version
				}
				fmt.Printf("worker    %-13s %s\n", name, v)
			}
			return nil
		},
	}
}

func newWorkersCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "workers", Short: "Shipped workers: build them ahead of use (images, offline CI)"}
	cmd.AddCommand(&cobra.Command{
		Use:   "build [NAME[@VERSION]...]",
		Short: "Build workers into the cache (every shipped worker's default version when none is named), a line each with its time",
		Example: `  lockcheck workers build                       # every shipped worker, default versions
  lockcheck workers build redisson@3.17.0 redis-py`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				args = worker.Names()
			}
			type build struct {
				s worker.Spec
				v string
			}
			var builds []build
			seen := map[string]bool{}
			for _, a := range args { // every name checked before the first build
				s, v, err := worker.Lookup(a)
				if err != nil {
					return runner.UsageError{Err: err}
				}
				if key := s.Folder + "@" + v; !seen[key] { // a control shares its folder's build
					seen[key] = true
					builds = append(builds, build{s, v})
				}
			}
			markRan(cmd)
			var failed []string
			for i, b := range builds {
				begin := time.Now()
				_, err := worker.Build(cmd.Context(), b.s, b.v, io.Discard)
				took := time.Since(begin).Round(100 * time.Millisecond)
				if err != nil {
					fmt.Fprintf(os.Stderr, "lockcheck: [%d/%d] %s@%s: failed after %s: %s\n", i+1, len(builds), b.s.Name, b.v, took, oneLine(err))
					failed = append(failed, b.s.Name+"@"+b.v)
					if cmd.Context().Err() != nil {
						return runner.Interrupted{Err: cmd.Context().Err()}
					}
					continue
				}
				fmt.Printf("lockcheck: [%d/%d] %s@%s: ready in %s (%s)\n", i+1, len(builds), b.s.Name, b.v, took, worker.CacheDir())
			}
			if len(failed) > 0 {
				return fmt.Errorf("%d of %d builds failed: %s", len(failed), len(builds), strings.Join(failed, ", "))
			}
			return nil
		},
	})
	return cmd
}
