package suite

import (
	"slices"
	"testing"
)

// Defaults fill lock, client and lock-spec one by one, never mixing a lock-spec with a lock or client.
func TestDefaultsPerField(t *testing.T) {
	for _, c := range []struct {
		name     string
		defaults string
		entry    string
		want     []string
	}{
		{"client under a default lock", "{lock: fair}", "{name: e, client: redisson}", []string{"--lock", "fair", "--client", "redisson"}},
		{"lock under a default client", "{client: redisson}", "{name: e, lock: fair}", []string{"--lock", "fair", "--client", "redisson"}},
		{"all from defaults", "{lock: fair, client: redisson}", "{name: e}", []string{"--lock", "fair", "--client", "redisson"}},
		{"the entry's lock wins", "{lock: fair}", "{name: e, lock: naive}", []string{"--lock", "naive"}},
		{"a spec takes no default lock", "{lock: fair, client: redisson}", "{name: e, lock-spec: /x.yaml}", []string{"--lock-spec", "/x.yaml"}},
		{"a lock takes no default spec", "{lock-spec: /x.yaml}", "{name: e, lock: naive}", []string{"--lock", "naive"}},
		{"a default spec", "{lock-spec: /x.yaml}", "{name: e}", []string{"--lock-spec", "/x.yaml"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse("t.yaml", []byte("name: t\ndefaults: "+c.defaults+"\nentries:\n  - "+c.entry+"\n"), "/")
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Cases) != 1 {
				t.Fatalf("%d cases", len(s.Cases))
			}
			args := s.Cases[0].Args
			for i := 0; i+1 < len(c.want); i += 2 {
				j := slices.Index(args, c.want[i])
				if j < 0 || j+1 >= len(args) || args[j+1] != c.want[i+1] {
					t.Errorf("args %v: want %s %s", args, c.want[i], c.want[i+1])
				}
			}
			for _, f := range []string{"--lock", "--client", "--lock-spec"} {
				if slices.Contains(args, f) && !slices.Contains(c.want, f) {
					t.Errorf("args %v: %s should not be there", args, f)
				}
			}
		})
	}
}

// SetServer (lockcheck suite --server) puts the server on every case, and refuses an entry that names its own.
func TestSetServer(t *testing.T) {
	s, err := Parse("t.yaml", []byte("name: t\ndefaults: {seeds: 2}\nentries:\n  - {name: a, lock: fair}\n  - {name: b, lock: naive, expect: invalid}\n"), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SetServer("valkey@8.1.8"); err != nil {
		t.Fatal(err)
	}
	for _, c := range s.Cases {
		if !slices.Contains(c.Args, "--server=valkey@8.1.8") {
			t.Errorf("%s: args %v have no --server=valkey@8.1.8", c.ID, c.Args)
		}
	}
	own, err := Parse("t.yaml", []byte("name: t\nentries:\n  - {name: a, lock: fair}\n  - {name: b, lock: fair, flags: {server-bin: /x}}\n"), "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := own.SetServer("valkey"); err == nil || err.Error() != `--server valkey: entry "b" names its own server (--server-bin=/x): give one` {
		t.Errorf("an entry with its own server: %v", err)
	}
}
