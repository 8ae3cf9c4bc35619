package bench

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockcheck/lockcheck/node"
)

// bareRate runs the primitive's script with concurrency goroutines, each on its own connection, for d:
// hand-written RESP, one command in flight per connection, no client library and no history. It is what a
// Go client can do here at best, the yardstick between redis-benchmark (C, one event loop) and lockcheck.
func bareRate(b *testing.B, n *node.Node, addr string, p primitive, d time.Duration) float64 {
	sha := loadScript(b, n, p)
	var total atomic.Int64
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	for c := 0; c < concurrency; c++ {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close()
		r := bufio.NewReader(conn)
		if _, err := conn.Write(resp(nil, "AUTH", n.Password())); err != nil {
			b.Fatal(err)
		}
		if line, err := r.ReadSlice('\n'); err != nil || line[0] != '+' {
			b.Fatalf("AUTH: %q %v", line, err)
		}
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			var buf []byte
			for time.Now().Before(stop) {
				args := []string{"EVALSHA", sha, strconv.Itoa(len(p.keys))}
				for _, k := range p.keys {
					args = append(args, k+strconv.FormatUint(rng.Uint64(), 36))
				}
				buf = resp(buf[:0], append(args, p.args...)...)
				if _, err := conn.Write(buf); err != nil {
					return
				}
				line, err := r.ReadSlice('\n')
				if err != nil || line[0] == '-' {
					return
				}
				if line[0] == '$' && line[1] != '-' { // a bulk string: its body follows
					if _, err := r.ReadSlice('\n'); err != nil {
						return
					}
				}
				total.Add(1)
			}
		}(uint64(c))
	}
	wg.Wait()
	return float64(total.Load()) / d.Seconds()
}

// resp appends a RESP array of bulk strings.
func resp(buf []byte, args ...string) []byte {
	buf = fmt.Appendf(buf, "*%d\r\n", len(args))
	for _, a := range args {
		buf = fmt.Appendf(buf, "$%d\r\n%s\r\n", len(a), a)
	}
	return buf
}
