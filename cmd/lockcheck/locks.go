package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/lockcheck/lockcheck/kinds"
	"github.com/spf13/cobra"
)

func newLocksCmd() *cobra.Command {
	var spec string
	cmd := &cobra.Command{
		Use:   "locks",
		Short: "List the locks lockcheck can test, what each supports, and the client workers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			if err := listLockSpec(spec); err != nil {
				return err
			}
			return writeLocks(os.Stdout)
		},
	}
	cmd.Flags().StringVar(&spec, "lock-spec", "", "also list the lock of this spec file (validated as run does)")
	return cmd
}

// writeLocks prints every kind with its family, topology and what it supports, then the client providers.
func writeLocks(w io.Writer) error {
	yes := func(b bool) string {
		if b {
			return "yes"
		}
		return "-"
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LOCK\tFAMILY\tTOPOLOGY\tRE-ENTRY\tFENCING\tFAIR\tGROUP\tWATCHDOG\tCONTROL\tWHAT")
	for _, n := range kinds.KindNames() {
		k, _ := kinds.Lookup(n)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.Name, k.Family.Name, k.Topology, yes(k.Reentrant),
			yes(k.Fenced), yes(k.Fair), yes(k.Group), yes(k.Watchdog), yes(k.Broken != ""), k.About)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	ps := kinds.Providers()
	if len(ps) == 0 {
		_, err := fmt.Fprintln(w, "\nclients: lockcheck's own Go clients only (no worker is registered; a worker speaks docs/protocol.md)")
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tLOCKS\tCONTROL\tWHAT")
	for _, p := range ps {
		what := p.About
		if p.Broken != "" {
			what = "negative control: " + p.Broken
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, strings.Join(p.Locks, ","), yes(p.Broken != ""), what)
	}
	return tw.Flush()
}
