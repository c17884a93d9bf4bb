package imagegen

import (
	"net/url"
	"strings"

	"github.com/imagegen/imagegen/fetch"
)

// checkCallback applies the service's rules to a valid callback_url, as
// Request.validate parsed it (nil for none): https, and not a host that
// the SSRF guard refuses whatever DNS answers (fetch.Config.RefusedHost:
// a loopback, private, link-local, … IP literal in any spelling, or a
// localhost name), so that such a callback is refused at submit instead
// of failing every delivery for an hour. Names that resolve to such
// addresses are refused at delivery, by the same guard.
// AllowHTTPCallbacks (development) allows both: it is the policy of the
// webhook sender too (server.New makes it with AllowPrivate set to it).
func (s *Service) checkCallback(u *url.URL) error {
	if u == nil || s.cfg.AllowHTTPCallbacks {
		return nil
	}
	if !strings.EqualFold(u.Scheme, "https") {
		return invalid("callback_url", "must be an https URL")
	}
	if problem := refusedHost(fetch.Config{}, u); problem != "" {
		return invalid("callback_url", "%s", problem)
	}
	return nil
}
