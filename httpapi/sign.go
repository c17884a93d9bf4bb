package httpapi

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"time"
)

// signer makes and checks image URL signatures: HMAC-SHA256 over the
// image id and the expiry, so a URL cannot be extended or moved to
// another image.
type signer struct{ key []byte }

func (s signer) sign(imageID string, expires int64) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(imageID))
	m.Write([]byte{0})
	m.Write(strconv.AppendInt(nil, expires, 10))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// verify reports whether sig is right for imageID and expires, and the
// URL has not expired at now. expires must be written exactly as sign
// writes it.
func (s signer) verify(imageID, expires, sig string, now time.Time) bool {
	exp, ok := parseExpires(expires)
	if !ok || now.Unix() >= exp {
		return false
	}
	return hmac.Equal([]byte(s.sign(imageID, exp)), []byte(sig))
}

// parseExpires parses an expiry in the one form sign writes: canonical
// decimal, with no sign and no leading zeros. Any other spelling of the
// same number ("+123", "0123") is refused, so a signed URL has one form.
func parseExpires(expires string) (int64, bool) {
	exp, err := strconv.ParseInt(expires, 10, 64)
	if err != nil || exp < 0 || strconv.FormatInt(exp, 10) != expires {
		return 0, false
	}
	return exp, true
}
