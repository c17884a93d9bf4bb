-- allow_run: the end of both allow scripts, after allow_args.lua and
-- allow_log.lua or allow_set.lua: each request in turn, as if each had
-- run on its own, so a script run for many requests answers as many runs
-- of one would. Its setup (the script call, TIME, the constant
-- arguments) is paid once for all of them.
--
-- Returns, for each request, {allowed (0 or 1), count in the window after
-- this request, time (µs) at which one more request will be allowed (0
-- if count < limit), now (µs) as used}, one after another; a request
-- whose key failed (a key of another type under the limiter's name, or
-- a value that is not a log) has the error's message in place of
-- allowed, and the others go on: each runs under pcall.
local out = {}
for i = 1, #KEYS do
  local ok, allowed, count, free, now = pcall(allow, KEYS[i], now_of(i))
  if not ok then -- allowed is the error: a Redis error reply ({err = ...}), or a message led by where it was raised
    if type(allowed) == 'table' then
      allowed = allowed.err
    else
      allowed = (string.gsub(tostring(allowed), '^[^:]*:%d+: ', ''))
    end
    count, free, now = 0, 0, 0
  end
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = allowed, count, free, now
end
return out
