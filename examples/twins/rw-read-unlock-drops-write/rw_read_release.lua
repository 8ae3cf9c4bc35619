-- RReadWriteLock read unlock with the unlock latch (Redisson RedissonReadLock.unlockInnerAsync, 3.44+).
-- KEYS[1] lock hash; KEYS[2] channel; KEYS[3] this reader's timeout-key prefix; KEYS[4] the hash tag
-- prefix '{name}'; KEYS[5] unlock latch. ARGV[1] unlock message; ARGV[2] owner; ARGV[3] publish command;
-- ARGV[4] latch lifetime ms. Replies 1 released entirely, 0 others still hold it, nil not held.
local seen = redis.call('get', KEYS[5])
if seen ~= false then return tonumber(seen) end
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  redis.call('set', KEYS[5], 1, 'px', ARGV[4])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 0 then return nil end
local n = redis.call('hincrby', KEYS[1], ARGV[2], -1)
if n == 0 then redis.call('hdel', KEYS[1], ARGV[2]) end
redis.call('del', KEYS[3] .. ':' .. (n + 1))
if redis.call('hlen', KEYS[1]) > 1 then
  -- Others remain: the hash lives as long as the longest remaining hold.
  local longest = -3
  for _, field in ipairs(redis.call('hkeys', KEYS[1])) do
    local holds = tonumber(redis.call('hget', KEYS[1], field))
    if type(holds) == 'number' then
      for i = holds, 1, -1 do
        longest = math.max(longest, redis.call('pttl', KEYS[4] .. ':' .. field .. ':rwlock_timeout:' .. i))
      end
    end
  end
  if longest > 0 then
    redis.call('pexpire', KEYS[1], longest)
    redis.call('set', KEYS[5], 0, 'px', ARGV[4])
    return 0
  end
  -- TWIN: no check that the releasing reader's own write hold is still there (Redisson <= 2.9.2, #891): a
  -- writer that read and let go of its read lock loses its write lock with it.
end
redis.call('del', KEYS[1])
redis.call(ARGV[3], KEYS[2], ARGV[1])
redis.call('set', KEYS[5], 1, 'px', ARGV[4])
return 1
