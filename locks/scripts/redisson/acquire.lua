-- RLock acquire (Redisson RedissonLock.tryLockInnerAsync, 3.19+).
-- KEYS[1] lock hash; ARGV[1] lease ms; ARGV[2] owner "<uuid>:<thread>".
-- Free or already ours: count one more hold, reset the lease, reply nil. Otherwise reply the holder's pttl.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
