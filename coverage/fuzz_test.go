package coverage

import (
	"bytes"
	"os"
	"testing"

	"github.com/lockcheck/lockcheck/checker"
	"github.com/lockcheck/lockcheck/history"
)

// FuzzOf: whatever history the reader accepts (`lockcheck check` takes any file), Of and Breaking never
// panic, Of is the same twice, and every transition is of the history's family.
func FuzzOf(f *testing.F) {
	rec, err := os.ReadFile("testdata/reentry-lease.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	meta := func(family string) string {
		return `{"type":"meta","time":0,"data":{"lock":"x","checks":{"family":"` + family + `","permits":2}}}` + "\n"
	}
	f.Add(rec)
	for _, fam := range []string{"rwlock", "semaphore", "expirable-semaphore", "latch", "mutex"} {
		f.Add([]byte(meta(fam) +
			`{"type":"invoke","time":2,"id":1,"client":"c1","thread":1,"key":"k","owner":"u:1","f":"acquire","args":{"lease_ms":30,"read":1,"permits":1}}` + "\n" +
			`{"type":"ok","time":3,"id":1,"value":1}` + "\n" +
			`{"type":"invoke","time":4,"id":2,"client":"c2","thread":1,"key":"k","owner":"u:1","f":"release","args":{"attempt":1}}` + "\n" +
			`{"type":"fail","time":9,"id":2,"value":-1}` + "\n" +
			`{"type":"invoke","time":5,"id":3,"client":"c1","thread":1,"key":"k","src":"wire","f":"countDown"}` + "\n" +
			`{"type":"fault","time":6,"client":"nemesis","f":"kill","phase":"start","targets":["n1"]}` + "\n"))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		h, err := history.Read(bytes.NewReader(in))
		if err != nil {
			return
		}
		a, b := Of(h), Of(h)
		if a.Len() != b.Len() {
			t.Fatalf("two maps of one history: %d and %d transitions", a.Len(), b.Len())
		}
		fam := FamilyOf(h)
		for _, x := range a.Transitions() {
			if x.Family != fam {
				t.Fatalf("%s in a %s history", x, fam)
			}
		}
		Breaking(h, []checker.Result{{Valid: checker.Invalid, At: h.End() / 2}})
	})
}
