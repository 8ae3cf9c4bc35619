-- Watchdog renewal of a read hold (Redisson renewal/ReadLockTask): the hash and every timeout key of the
-- reader. KEYS[1] lock hash; KEYS[2] the reader's timeout-key prefix; ARGV[1] lease ms; ARGV[2] owner.
-- Replies 1 renewed, 0 no longer held.
local holds = tonumber(redis.call('hget', KEYS[1], ARGV[2]))
if holds == nil then return 0 end
redis.call('pexpire', KEYS[1], math.max(redis.call('pttl', KEYS[1]), tonumber(ARGV[1])))
for i = holds, 1, -1 do
  redis.call('pexpire', KEYS[2] .. ':' .. i, ARGV[1])
end
return 1
