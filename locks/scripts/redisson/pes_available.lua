-- RPermitExpirableSemaphore availablePermits: reclaim every expired permit (by the caller's clock), then
-- read the count. KEYS[1] available permits; KEYS[2] permit deadlines; KEYS[3] channel;
-- ARGV[1] client now ms; ARGV[2] publish command.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[1], 'limit', 0, -1)
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local value = redis.call('incrby', KEYS[1], #expired)
  if tonumber(value) > 0 then redis.call(ARGV[2], KEYS[3], value) end
  return tonumber(value)
end
return tonumber(redis.call('get', KEYS[1]) or '0')
