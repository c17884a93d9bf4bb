package redis

// luaFlag is b as a script's argument: "1" for true, "0" for false (a
// script tests ARGV[n] == '1').
func luaFlag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
