-- TWIN of the watchdog's renewal (locks/scripts/redisson/renew.lua, Redisson renewal/LockTask): a lock its
-- owner has re-entered is answered "renewed" but not extended, so while the hold is re-entered the
-- watchdog renews nothing and the lock runs down under its holder (the shape of Redisson #6144, 3.44.0 to
-- 3.45.x: "Watchdog fails to renew on reentry locks").
-- KEYS[i] lock hash; ARGV[1] lease ms; ARGV[i+1] the owner to renew KEYS[i] for.
-- Replies one 1 (renewed) or 0 (no longer ours: renewal is dropped) per key.
local renewed = {}
for i = 1, #KEYS do
  local holds = redis.call('hget', KEYS[i], ARGV[i + 1])
  if holds ~= false then
    -- TWIN: only a lock held once is extended (was: hexists, then pexpire whatever the count)
    if holds == '1' then redis.call('pexpire', KEYS[i], ARGV[1]) end
    renewed[#renewed + 1] = 1
  else
    renewed[#renewed + 1] = 0
  end
end
return renewed
