-- BROKEN on purpose (fair-broken): takes a free lock whoever heads the queue, so a client that arrives
-- while others wait (often the one that just released it) overtakes them. Otherwise as fair_acquire.lua.
-- KEYS[1] lock hash; KEYS[2] waiter queue; KEYS[3] waiter deadlines.
-- ARGV[1] lease ms; ARGV[2] owner; ARGV[3] wait ms; ARGV[4] client now, epoch ms.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('lrem', KEYS[2], 0, ARGV[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
local ttl = redis.call('pttl', KEYS[1])
redis.call('zadd', KEYS[3], ttl + tonumber(ARGV[3]) + tonumber(ARGV[4]), ARGV[2])
redis.call('rpush', KEYS[2], ARGV[2])
return ttl
