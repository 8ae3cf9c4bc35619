-- RReadWriteLock write acquire (Redisson RedissonWriteLock.tryLockInnerAsync).
-- KEYS[1] lock hash; ARGV[1] lease ms; ARGV[2] owner .. ':write'.
-- Only when free, or re-entry by the write holder, which adds the lease to the remaining pttl. No upgrade
-- from read. Replies nil, or the pttl when refused.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'write' and redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], redis.call('pttl', KEYS[1]) + tonumber(ARGV[1]))
  return nil
end
-- TWIN: a reader may take the write lock as well (an upgrade), whoever else still reads (Redisson has no
-- upgrade: a reader asking to write waits like anyone else).
if mode == 'read' and redis.call('hexists', KEYS[1], string.sub(ARGV[2], 1, -7)) == 1 then
  redis.call('hset', KEYS[1], 'mode', 'write')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])
