-- BROKEN on purpose (fenced-broken): reads the token counter instead of incrementing it, so successive
-- holders get the same token and fencing cannot tell them apart.
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  local token = tonumber(redis.call('get', KEYS[2]) or '0')
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return {-1, token}
end
return {redis.call('pttl', KEYS[1]), -1}
