-- BROKEN on purpose (fair-broken): a newcomer joins the queue at its head (LPUSH where RPUSH belongs), so
-- the latest arrival is granted next, ahead of everyone who waited. Otherwise as fair_acquire.lua. Not the
-- barging bug (take a free lock whoever heads the queue): that needs an arrival to beat the woken head to a
-- lock free for a moment, a race the head wins in every handoff of some runs on a loaded machine, so its
-- control came out valid there; this one is flagged at the first grant after a waiter surely queued.
-- KEYS[1] lock hash; KEYS[2] waiter queue (list); KEYS[3] waiter deadlines (zset, client epoch ms).
-- ARGV[1] lease ms; ARGV[2] owner; ARGV[3] wait ms (this waiter's slot); ARGV[4] client now, epoch ms.
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
if redis.call('exists', KEYS[1]) == 0
   and (redis.call('exists', KEYS[2]) == 0 or redis.call('lindex', KEYS[2], 0) == ARGV[2]) then
  redis.call('lpop', KEYS[2])
  redis.call('zrem', KEYS[3], ARGV[2])
  local waiting = redis.call('zrange', KEYS[3], 0, -1)
  for i = 1, #waiting do
    redis.call('zincrby', KEYS[3], -tonumber(ARGV[3]), waiting[i])
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
if redis.call('zscore', KEYS[3], ARGV[2]) ~= false then
  return math.max(0, redis.call('pttl', KEYS[1]))
end
-- One slot behind the latest deadline (the queue's tail is no longer the last to come).
local last = redis.call('zrevrange', KEYS[3], 0, 0, 'WITHSCORES')
local ttl
if #last == 2 then
  ttl = tonumber(last[2]) - tonumber(ARGV[4])
else
  ttl = redis.call('pttl', KEYS[1])
end
local deadline = ttl + tonumber(ARGV[3]) + tonumber(ARGV[4])
if redis.call('zadd', KEYS[3], deadline, ARGV[2]) == 1 then
  redis.call('lpush', KEYS[2], ARGV[2])
end
return ttl
