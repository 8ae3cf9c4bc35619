-- BROKEN on purpose (expirable-semaphore-broken): issues a permit whether or not one is available.
local available = tonumber(redis.call('get', KEYS[1]) or '0')
redis.call('set', KEYS[1], math.max(available - tonumber(ARGV[1]), 0))
for i = 6, #ARGV do redis.call('zadd', KEYS[2], ARGV[2], ARGV[i]) end
return 'OK'
