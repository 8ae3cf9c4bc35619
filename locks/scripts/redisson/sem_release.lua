-- RSemaphore release (Redisson RedissonSemaphore.releaseAsync): permits are not owned, anyone may add.
-- KEYS[1] available permits; KEYS[2] channel; ARGV[1] permits; ARGV[2] publish command.
-- Replies the new count (Redisson's reply is empty; the count is published either way).
local available = redis.call('incrby', KEYS[1], ARGV[1])
redis.call(ARGV[2], KEYS[2], available)
return available
