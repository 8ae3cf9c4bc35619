package main

import (
	"fmt"

	"github.com/lockcheck/lockcheck/internal/redact"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// secret is the annotation that keeps a flag's value out of every command line lockcheck records: the
// history's meta record and the summary page are world-readable and served (issue 22, item 3).
const secret = "lockcheck/secret"

// markSecret says that flag name carries a secret (a password).
func markSecret(fs *pflag.FlagSet, name string) {
	_ = fs.SetAnnotation(name, secret, []string{"true"})
}

// Redacted stands for a secret flag's value in a recorded command line.
const Redacted = redact.Mark

// commandLine is the command that reproduces a run: every flag that was given, and the seed even when it
// was drawn, so that the summary page can show one line to paste. A secret's value is written as
// REDACTED: whoever reproduces the run supplies it again.
func commandLine(cmd *cobra.Command, seed int64) []string {
	out := []string{"lockcheck", cmd.Name()}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if _, ok := f.Annotations[secret]; ok {
			out = append(out, "--"+f.Name+"="+Redacted)
			return
		}
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
