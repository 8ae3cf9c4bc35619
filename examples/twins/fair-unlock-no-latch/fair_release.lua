-- TWIN of RFairLock unlock (locks/scripts/redisson/fair_release.lua) with the unlock latch left out, as
-- before Redisson 3.24 (#4871): a request resent after its reply was lost is applied again, not replayed.
-- KEYS[1] lock hash; KEYS[2] queue; KEYS[3] deadlines; KEYS[4] channel prefix; KEYS[5] unlock latch.
-- ARGV[1] unlock message; ARGV[2] lease ms on partial release; ARGV[3] owner; ARGV[4] client now ms;
-- ARGV[5] publish command; ARGV[6] latch lifetime ms.
-- Note Redisson's quirk: unlocking a lock that no longer exists answers 1, not nil.
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
local function wake_next()
  local nxt = redis.call('lindex', KEYS[2], 0)
  if nxt ~= false then redis.call(ARGV[5], KEYS[4] .. ':' .. nxt, ARGV[1]) end
end
if redis.call('exists', KEYS[1]) == 0 then
  wake_next()
  return 1
end
if redis.call('hexists', KEYS[1], ARGV[3]) == 0 then return nil end
local holds = redis.call('hincrby', KEYS[1], ARGV[3], -1)
if holds > 0 then
  redis.call('pexpire', KEYS[1], ARGV[2])
  return 0
end
redis.call('del', KEYS[1])
wake_next()
return 1
