package main

import (
	"fmt"
	"io"
	"os"

	"github.com/lockcheck/lockcheck/node/docker"
	"github.com/spf13/cobra"
)

func newImagesCmd() *cobra.Command {
	verbose := false
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build the Redis image of --backend docker offline (" + docker.DefaultImage + ", FROM scratch with this host's redis-server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			var log io.Writer = io.Discard
			if verbose {
				log = os.Stderr
			}
			if err := docker.BuildOffline(cmd.Context(), log); err != nil {
				return err
			}
			fmt.Println("built", docker.DefaultImage)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the build's output")
	return cmd
}

func newCleanCmd() *cobra.Command {
	run, force := "", false
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove every container, volume and network lockcheck created (label lockcheck=1) whose run is over, e.g. after a run was killed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			markRan(cmd)
			removed, kept, err := docker.CleanRuns(cmd.Context(), run, force)
			for _, r := range removed {
				fmt.Println("removed", r)
			}
			for _, k := range kept {
				fmt.Println("kept", k+"; --force removes it")
			}
			if err == nil && len(removed)+len(kept) == 0 {
				fmt.Println("nothing of lockcheck's to remove")
			}
			return err
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "only this run's (its id is in the container names: lockcheck-<run>-n1)")
	cmd.Flags().BoolVar(&force, "force", false, "also remove the things of runs that are alive (their owning process runs, or is on another host)")
	return cmd
}
