-- RReadWriteLock read acquire (Redisson RedissonReadLock.tryLockInnerAsync).
-- KEYS[1] lock hash (field mode = read|write); KEYS[2] prefix of this reader's timeout keys.
-- ARGV[1] lease ms; ARGV[2] reader owner; ARGV[3] the same owner's write field (owner .. ':write').
-- Granted when free, when in read mode, or to the write holder itself. Each hold gets its own timeout key
-- <prefix>:<n>; the hash lives as long as its longest hold. Replies nil, or the pttl when refused.
local mode = redis.call('hget', KEYS[1], 'mode')
if mode == false then
  redis.call('hset', KEYS[1], 'mode', 'read')
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if mode == 'read' or (mode == 'write' and redis.call('hexists', KEYS[1], ARGV[3]) == 1) then
  local n = redis.call('hincrby', KEYS[1], ARGV[2], 1)
  -- TWIN: every hold of this reader writes the first hold's timeout key (was ':' .. n), so a re-entry's
  -- lease replaces the outer hold's in what a later unlock counts as this reader's remaining time.
  redis.call('set', KEYS[2] .. ':1', 1, 'px', ARGV[1])
  redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
  return nil
end
return redis.call('pttl', KEYS[1])
