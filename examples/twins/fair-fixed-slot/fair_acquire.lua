-- RFairLock acquire, waiting variant (Redisson RedissonFairLock.tryLockInnerAsync, EVAL_LONG, 3.32+).
-- KEYS[1] lock hash; KEYS[2] waiter queue (list); KEYS[3] waiter deadlines (zset, client epoch ms).
-- ARGV[1] lease ms; ARGV[2] owner; ARGV[3] wait ms (this waiter's slot); ARGV[4] client now, epoch ms.
-- Replies nil when granted, else the time to wait before retrying.
-- TWIN: every waiter's slot is a fixed 5 s, whatever it waits (Redisson <= 3.13.2, #2883: threadWaitTime
-- hard-wired), here and in fair_acquire_failed.lua; was ARGV[3], the waiter's own wait.
local slot = 5000
-- Drop waiters at the head whose deadline has passed.
while true do
  local head = redis.call('lindex', KEYS[2], 0)
  if head == false then break end
  local deadline = redis.call('zscore', KEYS[3], head)
  if deadline ~= false and tonumber(deadline) <= tonumber(ARGV[4]) then
    redis.call('zrem', KEYS[3], head)
    redis.call('lpop', KEYS[2])
  else
    break
  end
end
-- Free, and nobody queued or we are first: take it, and pull everyone else's deadline in by one slot.
if redis.call('exists', KEYS[1]) == 0
   and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local waiting = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #waiting do
    redis.call('zincrby', KEYS[3], -slot, waiting[i])
  end
  redis.call('hset', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
-- Already queued: wait for the holder.
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
-- Join the queue one slot behind the last waiter (or behind the holder's lease).
local last = redis.call('lindex', KEYS[2], -1)
local ttl
if last ~= false and last ~= ARGV[2] and redis.call('zscore', KEYS[3], last) ~= false then
  ttl = tonumber(redis.call('zscore', KEYS[3], last)) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
local deadline = ttl + slot + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
  redis.call('rpush', KEYS[2], ARGV[2])
end
return ttl
