package history

import (
	"fmt"
	"unicode/utf8"
)

// MaxText bounds a record's free texts (error, detail) as written: a worker, a spec's script or a
// server can hand back megabytes, and a line over MaxLine would make the run refuse its own history.
const MaxText = 16 << 10

// ClipText keeps the first max bytes of s (on a rune boundary) and says how long s was.
func ClipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [clipped: %d bytes in all]", s[:cut], len(s))
}

// clipRecord bounds every text of rec to max bytes and keeps at most 64 targets, for a record whose
// line would otherwise exceed MaxLine. A non-meta record's Data (a worker's payload) that is still too
// long is replaced by its length: the reader must never meet a line it refuses.
func clipRecord(rec Record, max int) Record {
	for _, p := range []*string{&rec.Client, &rec.Key, &rec.Node, &rec.Owner, &rec.Src, &rec.F, &rec.Error, &rec.Phase, &rec.Detail} {
		*p = ClipText(*p, max)
	}
	if len(rec.Targets) > 64 {
		rec.Targets = append(rec.Targets[:64:64], fmt.Sprintf("… %d targets in all", len(rec.Targets)))
	}
	for i, t := range rec.Targets {
		rec.Targets[i] = ClipText(t, max)
	}
	if rec.Type != Meta && len(rec.Data) > 4*max {
		rec.Data = []byte(fmt.Sprintf(`{"clipped_bytes":%d}`, len(rec.Data)))
	}
	return rec
}
