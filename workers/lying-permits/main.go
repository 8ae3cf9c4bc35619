// Command lying-permits is the negative control of the API-level judging of expirable semaphores: a
// permit-expirable semaphore on one Redis node (permits by id in a sorted set scored by their deadline on
// the server's clock, lapsed ones reclaimed by whichever call runs next) whose release_permit answers
// released=true for a permit that had lapsed, as a library that never checks would. The wire recorder
// maps none of its scripts, so only the worker's own replies can catch it. With --honest it answers
// false there and is the control's honest twin.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/lockcheck/lockcheck/workers/sdk"
	"github.com/redis/go-redis/v9"
)

// reclaim returns the lapsed permits of KEYS[2] to the count in KEYS[1]; now is the server's clock in ms.
const reclaim = `local t = redis.call('time')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('zrangebyscore', KEYS[2], '-inf', now)
if #gone > 0 then
  redis.call('zremrangebyscore', KEYS[2], '-inf', now)
  redis.call('incrby', KEYS[1], #gone)
end
`

var (
	setScript     = redis.NewScript(`return redis.call('setnx', KEYS[1], ARGV[1])`)
	acquireScript = redis.NewScript(reclaim + `if tonumber(redis.call('get', KEYS[1]) or '0') < 1 then return 0 end
redis.call('decr', KEYS[1])
local deadline = '+inf'
if tonumber(ARGV[2]) > 0 then deadline = now + tonumber(ARGV[2]) end
redis.call('zadd', KEYS[2], deadline, ARGV[1])
return 1`)
	// releaseScript answers 1 for a permit still issued, else ARGV[2] (1: the lie, 0: the truth).
	releaseScript = redis.NewScript(reclaim + `if redis.call('zrem', KEYS[2], ARGV[1]) == 1 then
  redis.call('incr', KEYS[1])
  return 1
end
return tonumber(ARGV[2])`)
	availableScript = redis.NewScript(reclaim + `return tonumber(redis.call('get', KEYS[1]) or '0')`)
)

type sem struct {
	rdb   *redis.Client
	owner string
	lie   int
	mu    sync.Mutex
	n     int64 // permits issued by this client, for their ids
}

func keys(m sdk.Message) []string { return []string{m.Key, m.Key + ":permits"} }

// handle answers one request.
func (s *sem) handle(ctx context.Context, m sdk.Message) (sdk.Message, error) {
	ok := sdk.Message{Type: m.Type + "_ok", InReplyTo: m.MsgID}
	switch m.Type {
	case sdk.TypeSetPermits:
		n, err := setScript.Run(ctx, s.rdb, keys(m), m.N).Int64()
		ok.Set = sdk.Bool(n == 1)
		return ok, err
	case sdk.TypeAcquirePermit:
		s.mu.Lock()
		s.n++
		id := fmt.Sprintf("%s-%d-%d", s.owner, m.Thread, s.n)
		s.mu.Unlock()
		deadline := time.Now().Add(time.Duration(m.WaitMs) * time.Millisecond)
		for {
			n, err := acquireScript.Run(ctx, s.rdb, keys(m), id, m.LeaseMs).Int64()
			if err != nil {
				return ok, err
			}
			if n == 1 {
				ok.Permit = sdk.String(id)
				return ok, nil
			}
			if !time.Now().Before(deadline) {
				ok.Permit = sdk.String("")
				return ok, nil
			}
			time.Sleep(min(10*time.Millisecond, time.Until(deadline)))
		}
	case sdk.TypeReleasePermit:
		if m.Permit == nil {
			return ok, sdk.Errorf(sdk.CodeMalformed, "release_permit without permit")
		}
		n, err := releaseScript.Run(ctx, s.rdb, keys(m), *m.Permit, s.lie).Int64()
		ok.Released = sdk.Bool(n == 1)
		return ok, err
	case sdk.TypeAvailable:
		n, err := availableScript.Run(ctx, s.rdb, keys(m)).Int64()
		ok.Value = sdk.Int64(n)
		return ok, err
	}
	return ok, sdk.Errorf(sdk.CodeNotSupported, m.Type+" is not supported by this worker")
}

func main() {
	honest := flag.Bool("honest", false, "answer released=false for a lapsed permit (the control's honest twin)")
	flag.Parse()
	lib, lie := "lying-permits", 1
	if *honest {
		lib, lie = "honest-permits", 0
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	send := func(m sdk.Message) {
		b, _ := json.Marshal(m)
		mu.Lock()
		defer mu.Unlock()
		out.Write(append(b, '\n'))
		out.Flush()
	}
	fail := func(id int64, err error) {
		code := sdk.CodeCrash // when unsure, indefinite
		if e, ok := err.(*sdk.Error); ok {
			code = e.Code
		}
		send(sdk.Message{Type: sdk.TypeError, InReplyTo: id, Code: &code, Text: err.Error()})
	}
	ctx := context.Background()
	var s *sem
	var wg sync.WaitGroup
	defer wg.Wait()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for in.Scan() {
		var m sdk.Message
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			fmt.Fprintf(os.Stderr, "malformed request: %v\n", err)
			continue
		}
		switch {
		case m.Type == sdk.TypeInit:
			t, o := m.Topology, m.Options
			if t == nil || o == nil || len(t.Nodes) == 0 || t.Kind != "single" {
				fail(m.MsgID, sdk.Errorf(sdk.CodeNotSupported, "lying-permits runs on one node (--topology single)"))
				os.Exit(1)
			}
			timeout := time.Duration(o.TimeoutMs) * time.Millisecond
			s = &sem{owner: m.Client, lie: lie, rdb: redis.NewClient(&redis.Options{Addr: t.Nodes[0].Addr, Password: m.Password,
				MaxRetries: -1, DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, DisableIdentity: true, Protocol: 2})}
			send(sdk.Message{Type: "init_ok", InReplyTo: m.MsgID, Library: lib, Version: "1", Runtime: runtime.Version(),
				Kinds: []string{"expirable-semaphore"}})
		case m.Type == sdk.TypeShutdown:
			send(sdk.Message{Type: "shutdown_ok", InReplyTo: m.MsgID})
			return
		case s == nil:
			fail(m.MsgID, sdk.Errorf(sdk.CodeMalformed, "no init yet"))
		default:
			wg.Add(1)
			go func() {
				defer wg.Done()
				if r, err := s.handle(ctx, m); err != nil {
					fail(m.MsgID, err)
				} else {
					send(r)
				}
			}()
		}
	}
}
