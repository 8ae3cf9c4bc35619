package locks

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// On Redis Cluster a lock script and its WAIT must share one connection to the master of the key's slot,
// which go-redis's cluster pipeline cannot promise (WAIT has no key, so it would go to any node). So the
// script goes to that master's own client, and MOVED and ASK replies (the script did not run) are followed
// by hand, as Redisson's command executor does.

// maxRedirects bounds the MOVED/ASK hops of one script.
const maxRedirects = 5

func (r *Redisson) clusterEval(ctx context.Context, cc *redis.ClusterClient, script string, keys []string,
	args ...any) (any, error) {
	master, err := cc.MasterForKey(ctx, keys[0])
	if err != nil {
		return nil, err
	}
	addr := master.Options().Addr
	// The replica count is the shard's, kept across a failover as Redisson keeps it on the shard's entry: a
	// new primary read before its replica re-attached would say 0, and its writes would then go without
	// WAIT for good (an acknowledged release lost by the next TAKEOVER). The slot names the shard here.
	shard := fmt.Sprintf("slot %d", Slot(keys[0]))
	asking := false
	for hop := 0; ; hop++ {
		res, err := r.evalOn(ctx, r.nodeClient(addr), shard, asking, script, keys, args...)
		kind, to := redirect(err)
		if kind == "" || hop == maxRedirects {
			return res, err
		}
		if kind == "MOVED" {
			cc.ReloadState(ctx) // later commands learn the new layout too
		}
		addr, asking = to, kind == "ASK"
	}
}

// redirect reads "MOVED <slot> <addr>" or "ASK <slot> <addr>".
func redirect(err error) (kind, addr string) {
	if err == nil {
		return "", ""
	}
	f := strings.Fields(err.Error())
	if len(f) == 3 && (f[0] == "MOVED" || f[0] == "ASK") {
		return f[0], f[2]
	}
	return "", ""
}

// nodeClient is this client's connection pool to one cluster node, made like its cluster client (same
// dialer, timeouts and pause gate).
func (r *Redisson) nodeClient(addr string) redis.UniversalClient {
	r.nodesMu.Lock()
	defer r.nodesMu.Unlock()
	c := r.nodes[addr]
	if c == nil {
		conn := r.conn
		conn.Addr, conn.Cluster, conn.Sentinels = addr, nil, nil
		c = NewClient(conn)
		r.nodes[addr] = c
	}
	return c
}

// Slot is Redis Cluster's hash slot of key: CRC16 (XMODEM) of the key, or of its first non-empty {tag}.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
