package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
)

// RunMeta is the meta record's data, the first record of every history: enough to re-check it and to
// reproduce the run. The reader decodes it once (History.Run); nothing else parses the record.
type RunMeta struct {
	Lock     string   `json:"lock"`
	Topology string   `json:"topology"`
	Nemesis  []string `json:"nemesis"`
	Seed     int64    `json:"seed"`
	Options  Options  `json:"options"`
	// Plan is the fault plan (nemesis.Plan), kept as written: only the runner makes one, and the report
	// copies it.
	Plan     json.RawMessage   `json:"plan"`
	Versions map[string]string `json:"versions"`
	// ScriptSet is the script set the lock ran ("redisson"); with --scripts, "SET+DIR" (the directory whose
	// files replaced some of it): BaseScriptSet is the set alone.
	ScriptSet string `json:"script_set,omitempty"`
	// Spec names the spec file of a user-defined lock: such a lock is not registered, so the family its
	// checks name judges it (a history naming an unregistered lock without a spec is refused).
	Spec      string `json:"spec,omitempty"`
	Checks    Checks `json:"checks"`
	StartupMs int64  `json:"startup_ms,omitempty"`
	// ReadyMs is the whole start-up (deployment, scripts, clients) before the workload began: the run's
	// clock starts after it, at the meta record.
	ReadyMs int64   `json:"ready_ms,omitempty"`
	Client  *Client `json:"client,omitempty"` // the worker, when the clients were one
	// Command is the command line, for the summary page.
	Command []string `json:"command,omitempty"`
}

// Checks is what the checkers need to know about a run (kinds.Checks is this type, with its methods),
// so a history is judged without the kind that made it.
type Checks struct {
	Family  string `json:"family"`
	Fenced  bool   `json:"fenced,omitempty"`
	Fair    bool   `json:"fair,omitempty"`
	Group   bool   `json:"group,omitempty"`
	Permits int64  `json:"permits,omitempty"`
	// Members is set where a lock spans independent masters (RedLock): losing it on one is tolerated.
	Members bool `json:"members,omitempty"`
	// Liveness is set by --check liveness (kinds/extra.go): judge slow wake-ups and starvation too.
	Liveness bool `json:"liveness,omitempty"`
}

// Client names the worker of a run, from its init_ok.
type Client struct {
	Name    string   `json:"name"` // the registered name, or "cmd"
	Command string   `json:"command"`
	Library string   `json:"library"`
	Version string   `json:"version"`
	Runtime string   `json:"runtime,omitempty"`
	Kinds   []string `json:"kinds,omitempty"`
	Caps    []string `json:"caps,omitempty"`
	Broken  string   `json:"broken,omitempty"` // a negative control's flaw
	// LeaseGranularityMs is the unit of the library's leases (init_ok's): every lease sent was rounded to
	// a multiple of it.
	LeaseGranularityMs int64 `json:"lease_granularity_ms,omitempty"`
	// StartupMs is how long the workers took to start and answer init (all at once).
	StartupMs int64 `json:"startup_ms,omitempty"`
	// Clients and Go split a mixed run (--client NAME,go): the clients that ran the worker, and the Go
	// clients beside them.
	Clients []string `json:"clients,omitempty"`
	Go      *GoSide  `json:"go,omitempty"`
}

// GoSide names the Go clients of a mixed run.
type GoSide struct {
	Clients []string `json:"clients"`
	Library string   `json:"library"` // lockcheck's emulation
	Version string   `json:"version"` // lockcheck's revision, and the library version it follows
}

// Options are the run's options as the CLI gave them. Fields are in the order of their JSON names, so a
// new record's options are written as they were when they were a map (sorted keys, every key present).
type Options struct {
	Backend         string   `json:"backend"`
	Check           string   `json:"check"`
	CheckTimeout    Duration `json:"check_timeout"`
	Client          string   `json:"client"`
	ClientCmd       string   `json:"client_cmd"`
	ClientOptions   []string `json:"client_options"`
	Clients         int      `json:"clients"`
	ClockBump       Duration `json:"clock_bump"`
	Count           int64    `json:"count"`
	CrossThread     float64  `json:"cross_thread"`
	DockerImage     string   `json:"docker_image"`
	External        string   `json:"external"`
	ForceUnlock     float64  `json:"force_unlock"`
	Group           int      `json:"group"`
	Hold            string   `json:"hold"`
	Jitter          Duration `json:"jitter"`
	Keys            int      `json:"keys"`
	Latency         Duration `json:"latency"`
	Lease           string   `json:"lease"` // a range's text (1s, or 1s-10s)
	Lock            string   `json:"lock"`
	Nemesis         string   `json:"nemesis"`
	NemesisDuration Duration `json:"nemesis_duration"`
	NemesisInterval Duration `json:"nemesis_interval"`
	NemesisTargets  string   `json:"nemesis_targets"`
	NemesisTrigger  bool     `json:"nemesis_trigger"`
	Nodes           int      `json:"nodes"`
	OnLost          string   `json:"on_lost"`
	Permits         int64    `json:"permits"`
	Persistence     string   `json:"persistence"`
	Quiet           Duration `json:"quiet"`
	Readers         string   `json:"readers"`
	Reentry         float64  `json:"reentry"`
	Schedule        string   `json:"schedule,omitempty"`        // --schedule FILE
	ScheduleSHA256  string   `json:"schedule_sha256,omitempty"` // the file's hash, as it was played
	ScheduleAbout   string   `json:"schedule_about,omitempty"`  // its about line, clipped
	Scripts         string   `json:"scripts"`
	Seed            int64    `json:"seed"`
	Server          string   `json:"server,omitempty"`     // --server NAME[@VERSION]
	ServerBin       string   `json:"server_bin,omitempty"` // --server-bin PATH
	Threads         int      `json:"threads"`
	Time            Duration `json:"time"`
	Timeout         Duration `json:"timeout"`
	Topology        string   `json:"topology"`
	Wait            string   `json:"wait"` // a range's text
	Watchdog        Duration `json:"watchdog"`

	// read is the record's own text, when these options were read from one: written back as read (an older
	// history lacks later keys, a synthetic one has keys of its own), so results.json copies the run's.
	read json.RawMessage
}

// optionFields is Options without its methods, for the default encoding.
type optionFields Options

// UnmarshalJSON decodes the typed options and keeps their text.
func (o *Options) UnmarshalJSON(b []byte) error {
	var f optionFields
	if err := json.Unmarshal(b, &f); err != nil {
		return err
	}
	*o = Options(f)
	o.read = append(json.RawMessage(nil), b...)
	return nil
}

// MarshalJSON writes options read from a record as they were read, else every field.
func (o Options) MarshalJSON() ([]byte, error) {
	if o.read != nil {
		return o.read, nil
	}
	return json.Marshal(optionFields(o))
}

// Duration is a time.Duration written as its String ("1.5s"), as the meta record always has.
type Duration time.Duration

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration must be a string such as \"1.5s\"")
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// DecodeMeta decodes a meta record's data.
func DecodeMeta(data json.RawMessage) (*RunMeta, error) {
	var m RunMeta
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// ReadMeta decodes the meta record on a history's first line (a listing reads no more of a history).
func ReadMeta(r io.Reader) (*RunMeta, error) {
	line, err := readLine(bufio.NewReaderSize(r, 1<<16), nil)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var rec Record
	if err := json.Unmarshal(line, &rec); err != nil || rec.Type != Meta {
		return nil, errors.New("no meta record")
	}
	return DecodeMeta(rec.Data)
}

// BaseScriptSet is the script set the lock's scripts came from, without a --scripts directory.
func (m RunMeta) BaseScriptSet() string {
	set, _, _ := strings.Cut(m.ScriptSet, "+")
	return set
}
