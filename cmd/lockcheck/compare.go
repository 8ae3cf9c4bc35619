package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/lockcheck/lockcheck/compare"
	"github.com/lockcheck/lockcheck/runner"
	"github.com/lockcheck/lockcheck/suite"
	"github.com/spf13/cobra"
)

func newCompareCmd() *cobra.Command {
	var (
		locks, scenarios, results string
		seeds, parallel           int
		quick                     bool
		clients, specs, servers   []string
		server                    string
		set                       compare.Settings
	)
	cmd := &cobra.Command{
		Use:   "compare",
		Short: "Redlock or a single node? Every lock under every scenario of the reference table, measured beside its prediction",
		Args:  cobra.NoArgs,
		Example: `  lockcheck compare --quick
  lockcheck compare --seeds 5
  lockcheck compare --quick --client redsync --lock-spec examples/locks/setnx.yaml
  lockcheck compare --lease 10s --watchdog 30s --seeds 3 --locks redisson-redlock-lib,redisson-sentinel,redsync-redlock
  lockcheck compare --lease 5s --row-lease aioredlock-redlock=30s --locks python-redis-lock-single,aioredlock-redlock --scenarios S1,S5`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if seeds < 1 {
				return runner.UsageError{Err: fmt.Errorf("--seeds must be at least 1, got %d", seeds)}
			}
			if set.Clients < 0 {
				return runner.UsageError{Err: fmt.Errorf("--clients must be at least 1, got %d", set.Clients)}
			}
			ls, ss, err := compare.Select(locks, scenarios, quick)
			if err != nil {
				return runner.UsageError{Err: err}
			}
			for _, c := range clients { // a user's library: a row of its own, with no prediction, on one node
				ls = append(ls, compare.Lock{Name: c, Args: []string{"--client", c}, Lease: []string{"--lease", "2s"}, What: "--client " + c + " on one node"})
			}
			for _, p := range specs {
				name := strings.TrimSuffix(filepath.Base(p), filepath.Ext(p))
				ls = append(ls, compare.Lock{Name: name, Args: []string{"--lock-spec", p}, Lease: []string{"--lease", "2s"}, What: "--lock-spec " + p})
			}
			if servers, err = withServer(server, servers); err != nil {
				return runner.UsageError{Err: err}
			}
			if ls, err = compare.PerServer(ls, servers); err != nil {
				return runner.UsageError{Err: fmt.Errorf("compare: %v", err)}
			}
			if err := set.CheckRows(ls); err != nil {
				return runner.UsageError{Err: fmt.Errorf("compare: %v", err)}
			}
			seen := map[string]bool{}
			for _, l := range ls { // two rows of one name would share a run directory
				if seen[l.Name] {
					return runner.UsageError{Err: fmt.Errorf("compare: the row %s is given twice", l.Name)}
				}
				seen[l.Name] = true
			}
			// Every setting is checked, also one no row takes (a --watchdog among fixed-lease rows).
			if err := dryRun(cmd, set.Args()); err != nil {
				return runner.UsageError{Err: fmt.Errorf("compare: %s", oneLine(err))}
			}
			s := compare.Suite(ls, ss, seeds, set, nil)
			for _, c := range s.Cases {
				if err := dryRun(cmd, c.Args); err != nil {
					return runner.UsageError{Err: fmt.Errorf("compare: %s: %s", c.ID, oneLine(err))}
				}
			}
			markRan(cmd)
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			if results == "" {
				results = filepath.Join("results", "compare", time.Now().Format("20060102T150405"))
			}
			if err := runner.ResultsDir(results); err != nil {
				return err
			}
			if err := suite.RunsDir(results); err != nil { // before the first line about the runs
				return err
			}
			// The estimate leads, before any run: a table of JVM rows takes an hour where the emulations take
			// minutes. It assumes the cores are the runs' own and the workers built.
			fmt.Fprintf(os.Stderr, "lockcheck: compare: estimate %s on an idle machine: %d locks × %d scenarios × %d seeds = %d runs, %d at a time, into %s\n",
				compare.Estimate(s, ls, parallel), len(ls), len(ss), seeds, len(s.Cases), max(parallel, 1), results)
			prog := compare.NewProgress(os.Stderr, results, s, ls, ss)
			rep, err := suite.Run(cmd.Context(), s, "", suite.Config{Exe: exe, Dir: results, Parallel: parallel, KeepAll: true, Each: prog.Each})
			if err != nil {
				return err
			}
			t := compare.Build(results, rep, ls, ss, seeds, set)
			t.Text(os.Stdout)
			if err := t.JSON(filepath.Join(results, "compare.json")); err != nil {
				return err
			}
			md, err := os.Create(filepath.Join(results, "compare.md"))
			if err != nil {
				return err
			}
			t.Markdown(md, rep.Started)
			if err := md.Close(); err != nil {
				return err
			}
			if err := t.WritePage(results); err != nil {
				return err
			}
			fmt.Fprintf(os.Stdout, "\n(details: %s: compare.md, compare.json, index.html)\n", results)
			if rep.Stopped != "" || !t.Complete() {
				return exitError{exitUnknown} // a cell could not be decided
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&locks, "locks", "", "rows, comma-separated (default: "+compare.Names(false, false)+"; the real libraries when named: "+compare.Names(false, true)+")")
	f.StringVar(&scenarios, "scenarios", "", "columns, comma-separated ("+compare.IDs(false)+"; default all measured)")
	f.IntVar(&seeds, "seeds", 5, "seeds per cell (1..N)")
	f.BoolVar(&quick, "quick", false, compare.Names(true, false)+" over "+compare.IDs(true)+", one seed (unless --seeds)")
	f.StringSliceVar(&clients, "client", nil, "add a worker's lock as a row (NAME[@VERSION]; repeatable)")
	f.StringSliceVar(&specs, "lock-spec", nil, "add a spec lock as a row (repeatable)")
	f.StringVar(&server, "server", "", "run every row on this server (lockcheck run --server NAME[@VERSION]), e.g. valkey@8.1.8")
	f.StringSliceVar(&servers, "servers", nil, "run every row on each of these servers (--server values, comma-separated: redis,valkey@8.1.8), a row per lock and server")
	// A compare run mostly waits (holds, fault windows, failovers): one more than the cores keeps the full
	// table under its 45 minutes on two (33 min measured with 3, load average under 2 on the emulated rows).
	f.IntVar(&parallel, "parallel", runtime.NumCPU()+1, "runs at a time")
	f.StringVar(&results, "results", "", "directory (default results/compare/TIME)")
	// A team's own settings, passed through to every cell (each row's 2 s default otherwise).
	f.StringVar(&set.Lease, "lease", "", "lease of the rows with a fixed lease (default 2s)")
	f.StringVar(&set.Watchdog, "watchdog", "", "watchdog timeout of the rows a watchdog renews (default 2s)")
	f.StringToStringVar(&set.Rows, "row-lease", nil, "lease of one row, ROW=D (comma-separated or repeated): its lease or watchdog timeout, whichever it is timed by, over --lease and --watchdog")
	f.StringVar(&set.Hold, "hold", "", "hold (range) of every cell, over the scenarios' own")
	f.IntVar(&set.Clients, "clients", 0, "clients of every cell (default the run's)")
	cmd.PreRun = func(cmd *cobra.Command, _ []string) {
		if quick && !cmd.Flags().Changed("seeds") {
			seeds = 1
		}
	}
	return cmd
}
