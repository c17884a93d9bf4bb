-- allow_args: the start of both allow scripts (allow_log.lua and
-- allow_set.lua, which the limiter runs after it): their arguments and
-- the time of the request.
--
-- KEYS[1]  the key
-- ARGV[1]  now in microseconds, or '' to read the server's clock (TIME)
-- ARGV[2]  window in microseconds
-- ARGV[3]  limit
-- ARGV[4]  time to live of the key in milliseconds
local key = KEYS[1]
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])

local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
