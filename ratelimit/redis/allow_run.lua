-- allow_run: the end of both allow scripts, after allow_args.lua and
-- allow_log.lua or allow_set.lua: each request in turn, as if each had
-- run on its own, so a script run for many requests answers as many runs
-- of one would. Its setup (the script call, TIME, the constant
-- arguments) is paid once for all of them.
--
-- Returns, for each request, {allowed (0 or 1), count in the window after
-- this request, time (µs) at which one more request will be allowed (0
-- if count < limit), now (µs) as used}, one after another; a request
-- whose key Redis could not read (a key of another type) has the error's
-- message in place of allowed.
local out = {}
for i = 1, #KEYS do
  local allowed, count, free, now = allow(KEYS[i], now_of(i))
  if type(allowed) == 'table' then allowed, count, free, now = allowed.err, 0, 0, 0 end
  out[4 * i - 3], out[4 * i - 2], out[4 * i - 1], out[4 * i] = allowed, count, free, now
end
return out
