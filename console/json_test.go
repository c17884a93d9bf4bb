package console_test

import (
	"encoding/json"
	"fmt"
	"net/http"
)

func decodeJSON(res *http.Response, v any) error {
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return json.NewDecoder(res.Body).Decode(v)
}
