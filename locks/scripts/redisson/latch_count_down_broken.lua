-- BROKEN on purpose (latch-broken): every countDown is applied twice, as a blindly retried countDown was
-- before Redisson 3.16.4 (#3850), so the latch opens after half the count.
local v = redis.call('decrby', KEYS[1], 2)
if v <= 0 then redis.call('del', KEYS[1]) end
if v <= 0 then redis.call(ARGV[2], KEYS[2], ARGV[1]) end
return v
