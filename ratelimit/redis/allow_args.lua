-- allow_args: the start of both allow scripts (allow_log.lua or
-- allow_set.lua comes next, then allow_run.lua): their arguments and the
-- time of the requests.
--
-- KEYS     the keys of the requests, one a request, in the order they
--          were made (a key may come more than once)
-- ARGV[1]  window in microseconds
-- ARGV[2]  limit
-- ARGV[3]  time to live of a key in milliseconds
-- ARGV[3+i] the time of request i in microseconds, or '' to read the
--          server's clock (TIME, read once for all of them)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
local ttl = ARGV[3]

local clock
local function now_of(i)
  local at = ARGV[3 + i]
  if at ~= '' then return tonumber(at) end
  if not clock then
    local t = redis.call('TIME')
    clock = tonumber(t[1]) * 1000000 + tonumber(t[2])
  end
  return clock
end
