-- BROKEN on purpose (semaphore-broken): a release without a bound: each release returns twice the permits
-- it took, so the semaphore issues more permits than it has.
local available = redis.call('incrby', KEYS[1], 2 * tonumber(ARGV[1]))
redis.call(ARGV[2], KEYS[2], available)
return available
