-- TWIN of RLock unlock (locks/scripts/redisson/release.lua) with the unlock latch left out, as before
-- Redisson 3.24 (#4871): a request resent after its reply was lost is applied again instead of replayed.
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] unlock latch (unused here).
-- ARGV[1] unlock message; ARGV[2] lease ms to keep on a partial release; ARGV[3] owner;
-- ARGV[4] publish command; ARGV[5] latch lifetime ms (unused here).
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then
  return nil
end
local holds = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if holds > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
redis.call(ARGV[4], KEYS[2], ARGV[1])
return 1
