-- RFairLock give-up (Redisson acquireFailedAsync): leave the queue and give the slot back to those behind.
-- KEYS[1] waiter queue; KEYS[2] waiter deadlines; ARGV[1] owner; ARGV[2] wait ms.
local queue = redis.call('lrange', KEYS[1], 0, -1)
local i = 1
while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1 end
for j = i + 1, #queue do
  -- TWIN: the fixed 5 s slot (see fair_acquire.lua); was ARGV[2], the waiter's own wait.
  redis.call('zincrby', KEYS[2], -5000, queue[j])
end
redis.call('zrem', KEYS[2], ARGV[1])
redis.call('lrem', KEYS[1], 0, ARGV[1])
