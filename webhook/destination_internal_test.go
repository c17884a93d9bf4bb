package webhook

import "testing"

// TestDestinationIsOneNameAReceiver: the spellings of one receiver's
// URL are one destination (PerDestination counts them together), and
// another host or port is another.
func TestDestinationIsOneNameAReceiver(t *testing.T) {
	same := []string{
		"https://example.com/hook",
		"https://EXAMPLE.com/other",
		"https://example.com./hook",
		"https://example.com:443/hook",
		"HTTPS://Example.COM.:443/x?y=1",
		"https://example.com:0443/hook",    // the port as a number
		"https://ｅｘａｍｐｌｅ.com/hook",         // fullwidth: the transport dials example.com
		"https://%EF%BD%85xample.com/hook", // the same, escaped
	}
	want := destination(same[0])
	for _, u := range same[1:] {
		if got := destination(u); got != want {
			t.Errorf("%s: %q; want %q, as %s", u, got, want, same[0])
		}
	}
	for _, u := range []string{"https://example.com:8443/hook", "http://example.com/hook", "https://example.org/hook", "https://[2001:db8::1]/hook"} {
		if got := destination(u); got == want {
			t.Errorf("%s: %q, the same as %s", u, got, same[0])
		}
	}
	for _, pair := range [][2]string{
		{"https://[2001:DB8::1]/a", "https://[2001:db8::1]:443/b"},
		{"https://[2001:db8:0:0::1]/a", "https://[2001:db8::1]/b"}, // one IPv6 address, two spellings
		{"https://[::ffff:8.8.8.8]/a", "https://8.8.8.8/b"},        // IPv4-mapped: the sender dials 8.8.8.8
	} {
		if a, b := destination(pair[0]), destination(pair[1]); a != b {
			t.Errorf("one receiver: %q and %q", a, b)
		}
	}
}
