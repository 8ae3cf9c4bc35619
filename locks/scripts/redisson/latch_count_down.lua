-- RCountDownLatch countDown (Redisson RedissonCountDownLatch.countDownAsync): never retried.
-- KEYS[1] count; KEYS[2] channel; ARGV[1] zero message; ARGV[2] publish command.
-- At zero or below the key goes (a missing key reads as an open latch). Replies the count after.
local v = redis.call('decr', KEYS[1])
if v <= 0 then redis.call('del', KEYS[1]) end
if v == 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
return v
