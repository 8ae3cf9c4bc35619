-- RSemaphore tryAcquire (Redisson RedissonSemaphore.tryAcquireAsync0).
-- KEYS[1] available permits; ARGV[1] permits wanted. Replies 1 taken, 0 not enough.
local available = redis.call('get', KEYS[1])
if available ~= false and tonumber(available) >= tonumber(ARGV[1]) then
  redis.call('decrby', KEYS[1], ARGV[1])
  return 1
end
return 0
