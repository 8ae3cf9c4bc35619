-- RSemaphore / RPermitExpirableSemaphore trySetPermits: set the count once.
-- KEYS[1] available permits; KEYS[2] channel; ARGV[1] permits; ARGV[2] publish command. Replies 1 or 0.
if redis.call('get', KEYS[1]) == false then
  redis.call('set', KEYS[1], ARGV[1])
  redis.call(ARGV[2], KEYS[2], ARGV[1])
  return 1
end
return 0
