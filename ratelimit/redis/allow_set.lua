-- allow: one request for one key of the Redis limiter (see Limiter.Allow).
--
-- The key is its sorted set: one member per accepted request in the
-- window, scored by its time in microseconds.
--
-- Times in microseconds (whole numbers) are turned into strings with
-- '%d': Lua's own conversion (tostring, ..) uses '%.14g' and would lose
-- their low digits (and costs more, as '%.0f' does).
-- (allow_args.lua comes first: window, limit and ttl are set.)

local function allow(key, now)
  -- Times never go back within a key: a request made while the clock
  -- reads earlier than the newest one (a clock stepped back, or another
  -- process passing its own time) counts at the newest one. This also
  -- makes the member names below unique. The newest one's time starts
  -- its member (see the ZADD below), which Redis need not format as it
  -- would the score. Its range is given as strings: Redis writes each
  -- number handed to redis.call with snprintf('%.17g'), about 2,200
  -- server instructions each (callgrind), 4 % of a check.
  local newest = redis.call('ZRANGE', key, '-1', '-1')[1]
  if newest then
    newest = tonumber(string.sub(newest, 1, string.find(newest, '-', 1, true) - 1))
    if newest > now then now = newest end
  end

  -- A request made at t stops counting at t + window.
  redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%d', now - window))
  local count = redis.call('ZCARD', key)

  local allowed = 0
  if count < limit then
    -- Unique: members made at one time differ in count, which only grows
    -- while the time stays the same.
    redis.call('ZADD', key, string.format('%d', now), string.format('%d-%d', now, count))
    redis.call('PEXPIRE', key, ttl)
    count = count + 1
    allowed = 1
  end

  -- With no request left, one more is allowed when enough of the oldest
  -- have left the window to bring count below limit.
  local free = 0
  if count >= limit then
    local at = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')[2]
    free = tonumber(at) + window
  end
  return allowed, count, free, now
end
