-- RPermitExpirableSemaphore release of one permit id (Redisson tryReleaseAsync).
-- KEYS[1] available permits; KEYS[2] channel; KEYS[3] permit deadlines. ARGV[1] id; ARGV[2] permits (1);
-- ARGV[3] client now ms; ARGV[4] publish command.
-- An expired permit still comes back to the pool, but the reply is 0, so the caller learns it had lapsed.
local deadline = redis.call('zscore', KEYS[3], ARGV[1])
-- TWIN: the id's removal is not checked (was: zrem ~= 1 -> return 0), so a release applied twice (its reply
-- lost, the request resent) gives its permit back twice.
redis.call('zrem', KEYS[3], ARGV[1])
local value = redis.call('incrby', KEYS[1], ARGV[2])
redis.call(ARGV[4], KEYS[2], value)
if tonumber(deadline) <= tonumber(ARGV[3]) then return 0 end
return 1
