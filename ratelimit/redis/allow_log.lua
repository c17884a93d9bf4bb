-- allow: one request for one key of the Redis limiter (see Limiter.Allow).
--
-- The key is its log: the times (µs) of its accepted requests that may
-- still be in the window, oldest first, each as 16 decimal digits, in
-- one string.
--
-- An accepted request costs a GET and a SET (with the key's TTL); a
-- refused one only the GET. The log is in time order, so the requests
-- still in the window are found by a binary search, and an accepted one
-- drops those that have left it and appends its own time. Times are
-- written with '%016.0f' (Lua's own conversion uses '%.14g' and would
-- lose their low digits); Lua's numbers hold microseconds exactly until
-- 2255 (2^53 µs), within the 16 digits. (They are compared as numbers:
-- as strings they would cost about 5 % less, but Lua compares strings
-- with strcoll, in the locale Redis runs in, and a time before 1970 has
-- a sign.)
-- (allow_args.lua comes first: window, limit and ttl are set.)

local width = 16
local function allow(key, now)
  local log = redis.call('GET', key) or ''
  local n = #log / width
  local function at(i) -- the i-th time of the log, from 0
    return tonumber(string.sub(log, width * i + 1, width * i + width))
  end

  -- Times never go back within a key: a request made while the clock
  -- reads earlier than the newest one (a clock stepped back, or another
  -- process passing its own time) counts at the newest one.
  if n > 0 then
    local newest = at(n - 1)
    if newest > now then now = newest end
  end

  -- A request made at t stops counting at t + window: the first one still
  -- counting is the first later than now - window.
  local first, hi, cut = 0, n, now - window
  while first < hi do
    local mid = math.floor((first + hi) / 2)
    if at(mid) > cut then hi = mid else first = mid + 1 end
  end
  local count = n - first

  local allowed = 0
  if count < limit then
    log = string.sub(log, width * first + 1) .. string.format('%016.0f', now)
    redis.call('SET', key, log, 'PX', ttl)
    first, count, allowed = 0, count + 1, 1
  end

  -- With no request left, one more is allowed when enough of the oldest
  -- have left the window to bring count below limit.
  local free = 0
  if count >= limit then
    free = at(first + count - limit) + window
  end
  return allowed, count, free, now
end
