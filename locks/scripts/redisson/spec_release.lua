-- Redlock release (the Redis docs' algorithm): delete the key only if it still holds our value.
-- KEYS[1] lock key; ARGV[1] our value. Replies 1 deleted, 0 not ours (or gone).
if redis.call('get', KEYS[1]) == ARGV[1] then
  return redis.call('del', KEYS[1])
end
return 0
