-- RReadWriteLock write unlock with the unlock latch (Redisson RedissonWriteLock.unlockInnerAsync).
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] unlock latch. ARGV[1] message (1: wake all readers);
-- ARGV[2] lease ms on partial release; ARGV[3] owner .. ':write'; ARGV[4] publish command; ARGV[5] latch ms.
-- Replies 1 released (the lock stays in read mode if the holder also reads), 0 still held, nil not held.
local seen = redis.call('get', KEYS[3])
if seen ~= false then return tonumber(seen) end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[4], KEYS[2], ARGV[1])
  redis.call('set', KEYS[3], 1, 'px', ARGV[5])
  return nil
end
if mode ~= 'write' or redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if n > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('hdel', KEYS[1], ARGV[3])
if redis.call('hlen', KEYS[1]) == 1 then
  redis.call('del', KEYS[1])
  redis.call(ARGV[4], KEYS[2], ARGV[1])
else
  redis.call('hset', KEYS[1], 'mode', 'read')
end
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
