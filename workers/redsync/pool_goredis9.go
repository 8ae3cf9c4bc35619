//go:build ignore && !goredis8

package main

import (
	"time"

	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/redis/go-redis/v9"
)

// newPools makes one go-redis v9 client, and so one redsync pool, per master (build.sh picks this file
// for versions that ship redis/goredis/v9).
func newPools(t topology, password string, timeout time.Duration) ([]redsyncredis.Pool, func(), error) {
	as, err := addrs(t)
	if err != nil {
		return nil, nil, err
	}
	var pools []redsyncredis.Pool
	var clients []*redis.Client
	for _, a := range as {
		c := redis.NewClient(&redis.Options{Addr: a, Password: password,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
		clients = append(clients, c)
		pools = append(pools, goredis.NewPool(c))
	}
	return pools, func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}, nil
}
