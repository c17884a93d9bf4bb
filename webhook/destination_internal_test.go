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
	if a, b := destination("https://[2001:DB8::1]/a"), destination("https://[2001:db8::1]:443/b"); a != b {
		t.Errorf("one IPv6 receiver: %q and %q", a, b)
	}
}
