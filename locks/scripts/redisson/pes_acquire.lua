-- RPermitExpirableSemaphore tryAcquire of one permit (Redisson tryAcquireAsync).
-- KEYS[1] available permits; KEYS[2] permit deadlines (zset id -> client epoch ms); KEYS[3] channel.
-- ARGV[1] permits (1); ARGV[2] this permit's deadline; ARGV[3] client now ms; ARGV[4] the no-lease sentinel;
-- ARGV[5] publish command; ARGV[6] the new permit id.
-- First reclaims (by the caller's clock) up to ARGV[1] expired permits. Replies 'OK', ':<nearest deadline>'
-- or nil.
local expired = redis.call('zrangebyscore', KEYS[2], 0, ARGV[3], 'limit', 0, ARGV[1])
if #expired > 0 then
  redis.call('zrem', KEYS[2], unpack(expired))
  local value = redis.call('incrby', KEYS[1], #expired)
  if tonumber(value) > 0 then redis.call(ARGV[5], KEYS[3], value) end
end
local available = redis.call('get', KEYS[1])
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  for i = 6, #ARGV do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]) end
  local ttl = redis.call('pttl', KEYS[1])
  if ttl > 0 then redis.call('pexpire', KEYS[2], ttl) end
  return 'OK'
end
local first = redis.call('zrange', KEYS[2], 0, 0, 'WITHSCORES')
if first[1] ~= nil and first[2] ~= ARGV[4] then return ':' .. tostring(first[2]) end
return nil
