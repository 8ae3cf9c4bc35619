-- Watchdog renewal of a batch of locks (Redisson renewal/LockTask, 3.44+).
-- KEYS[i] lock hash; ARGV[1] lease ms; ARGV[i+1] the owner to renew KEYS[i] for.
-- Replies one 1 (renewed) or 0 (no longer ours: renewal is dropped) per key.
local renewed = {}
for i = 1, #KEYS do
  if redis.call('hexists', KEYS[i], ARGV[i + 1]) == 1 then
    redis.call('pexpire', KEYS[i], ARGV[1])
    renewed[#renewed + 1] = 1
  else
    renewed[#renewed + 1] = 0
  end
end
return renewed
