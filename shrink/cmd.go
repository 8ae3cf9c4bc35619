// Package shrink finds a smaller run that fails the same way as a recorded one (lockcheck shrink): it
// re-runs candidates, each one reducer's step smaller than the best so far, and keeps a step only when
// every one of several seeds fails with the original's signature.
package shrink

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lockcheck/lockcheck/history"
)

// Flag is one --name=value of a run's command line.
type Flag struct{ Name, Value string }

// Cmd is a lockcheck run as its flags: those given, in order, and the run's effective options (a
// negative control's own run flags, the defaults) for a reducer to read where a flag was not given.
// Withheld are the recorded flags a file may not give (history.Withheld): FromRun leaves them out of Given,
// and only Give puts one back, with the value the user named.
type Cmd struct {
	Given    []Flag
	Withheld []Flag
	// Secrets are the flags recorded as REDACTED: a run reads each from its environment.
	Secrets   []string
	effective map[string]string
}

// redacted is how a recorded command line writes a secret's value (cmd/lockcheck's commandLine).
const redacted = "REDACTED"

// FromRun is the command of a recorded run: its meta record's command line (lockcheck run --name=value
// ...) and results.json's options. A run directory is data: only the flags history.FromFile allows are
// taken; the rest are in Withheld. The seed, the results directory and a secret are left out (the child
// reads a secret from the environment as the original did: --external-password's
// $LOCKCHECK_EXTERNAL_PASSWORD).
func FromRun(command []string, options json.RawMessage) (Cmd, error) {
	if len(command) < 2 || command[1] != "run" {
		return Cmd{}, fmt.Errorf("the recorded command line is not a lockcheck run: %q", strings.Join(command, " "))
	}
	c := Cmd{effective: map[string]string{}}
	for _, a := range command[2:] {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if !ok || !strings.HasPrefix(a, "--") {
			return Cmd{}, fmt.Errorf("the recorded command line has %q where lockcheck writes --name=value", a)
		}
		if value == redacted {
			c.Secrets = append(c.Secrets, name)
			continue
		}
		if name == "seed" || slices.Contains(history.NotReplayed, name) {
			continue
		}
		if safe, _ := history.FromFile(name); !safe {
			c.Withheld = append(c.Withheld, Flag{name, value})
			continue
		}
		c.Given = append(c.Given, Flag{name, value})
	}
	if len(options) > 0 {
		var opts map[string]any
		if err := json.Unmarshal(options, &opts); err != nil {
			return Cmd{}, fmt.Errorf("results.json's options: %v", err)
		}
		for k, v := range opts {
			name := strings.ReplaceAll(k, "_", "-")
			if safe, _ := history.FromFile(name); safe {
				c.effective[name] = optionText(v)
			}
		}
	}
	return c, nil
}

// Give puts a withheld flag back with the values the user named (a flag the run did not record is
// added): the user's word, not the file's. A repeatable flag (--client-option) takes several values.
func (c Cmd) Give(name string, values ...string) Cmd {
	out := c.Without(name)
	out.Withheld = slices.DeleteFunc(slices.Clone(c.Withheld), func(f Flag) bool { return f.Name == name })
	for _, v := range values {
		out.Given = append(out.Given, Flag{name, v})
	}
	return out
}

// Recorded are the values the run recorded for a withheld flag.
func (c Cmd) Recorded(name string) []string {
	var out []string
	for _, f := range c.Withheld {
		if f.Name == name {
			out = append(out, f.Value)
		}
	}
	return out
}

// Words are the flags as --name=value words.
func Words(flags []Flag) []string {
	out := make([]string, len(flags))
	for i, f := range flags {
		out[i] = "--" + f.Name + "=" + f.Value
	}
	return out
}

// optionText is an option's JSON value as its flag takes it.
func optionText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Get is a flag's value: the given one, or the run's effective option.
func (c Cmd) Get(name string) string {
	for i := len(c.Given) - 1; i >= 0; i-- {
		if c.Given[i].Name == name {
			return c.Given[i].Value
		}
	}
	return c.effective[name]
}

// With is the command with one flag set (given from then on).
func (c Cmd) With(name, value string) Cmd {
	out := Cmd{Withheld: c.Withheld, effective: c.effective}
	set := false
	for _, f := range c.Given {
		if f.Name == name {
			if set {
				continue
			}
			f.Value, set = value, true
		}
		out.Given = append(out.Given, f)
	}
	if !set {
		out.Given = append(out.Given, Flag{name, value})
	}
	return out
}

// Without is the command without the flags named (their effective values stay readable).
func (c Cmd) Without(names ...string) Cmd {
	out := Cmd{Withheld: c.Withheld, effective: c.effective}
	for _, f := range c.Given {
		if !slices.Contains(names, f.Name) {
			out.Given = append(out.Given, f)
		}
	}
	return out
}

// Args are lockcheck run's arguments, without a seed or a results directory.
func (c Cmd) Args() []string { return Words(c.Given) }

// Line is the command a person pastes to run it with a seed.
func (c Cmd) Line(seed int64) string {
	words := []string{"lockcheck", "run"}
	for _, a := range c.Args() {
		words = append(words, shellQuote(a))
	}
	return strings.Join(append(words, fmt.Sprintf("--seed=%d", seed)), " ")
}

// shellQuote keeps a word whole through a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_=.,:/@%+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
