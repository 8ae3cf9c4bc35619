-- RLock unlock with the unlock latch (Redisson RedissonLock.unlockInnerAsync, 3.24+).
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] unlock latch for this request id.
-- ARGV[1] unlock message; ARGV[2] lease ms to keep on a partial release; ARGV[3] owner;
-- ARGV[4] publish command; ARGV[5] latch lifetime ms.
-- A retried request replays the answer stored in its latch instead of unlocking twice.
local seen = redis.call('get', KEYS[3])
if seen ~= false then
  return tonumber(seen)
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local holds = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if holds > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  redis.call('set', KEYS[3], 0, 'px', ARGV[5])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
redis.call('set', KEYS[3], 1, 'px', ARGV[5])
return 1
