-- RCountDownLatch trySetCount: only on a missing (open) latch. KEYS[1] count; KEYS[2] channel;
-- ARGV[1] new-count message; ARGV[2] count; ARGV[3] publish command. Replies 1 or 0.
if redis.call('exists', KEYS[1]) == 0 then
  redis.call('set', KEYS[1], ARGV[2])
  redis.call(ARGV[3], KEYS[2], ARGV[1])
  return 1
end
return 0
