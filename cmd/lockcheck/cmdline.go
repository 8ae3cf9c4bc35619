package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// commandLine is the command that reproduces a run: every flag that was given, and the seed even when it
// was drawn, so that the summary page can show one line to paste.
func commandLine(cmd *cobra.Command, seed int64) []string {
	out := []string{"lockcheck", cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			for _, v := range sv.GetSlice() {
				out = append(out, "--"+f.Name+"="+v)
			}
			return
		}
		out = append(out, "--"+f.Name+"="+f.Value.String())
	})
	if !cmd.Flags().Changed("seed") {
		out = append(out, fmt.Sprintf("--seed=%d", seed))
	}
	return out
}
