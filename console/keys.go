package console

import (
	"errors"
	"net/http"

	"github.com/imagegen/imagegen"
)

// keysData is the keys page: the user's keys, and a new key shown once.
type keysData struct {
	Keys    []imagegen.APIKey
	NewKey  string
	NewName string
	Current string // the key id of the viewer's session, if any
	// SignOutEverywhere offers to end every key session of the user.
	SignOutEverywhere bool
}

func (c *Console) keysPage(w http.ResponseWriter, r *http.Request) {
	c.showKeys(w, r, http.StatusOK, keysData{}, "", flash(r))
}

func (c *Console) showKeys(w http.ResponseWriter, r *http.Request, status int, d keysData, errMsg string, n notice) {
	v := viewerFrom(r.Context())
	keys, err := c.svc.Keys(r.Context(), v.User)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	// Newest first.
	d.Keys = make([]imagegen.APIKey, 0, len(keys))
	for i := len(keys) - 1; i >= 0; i-- {
		d.Keys = append(d.Keys, keys[i])
	}
	d.Current = v.KeyID
	d.SignOutEverywhere = c.cfg.KeySignIn
	c.render(w, r, status, "keys", page{Title: "API keys", Data: d, Error: errMsg, Message: n.success, Info: n.info})
}

// createKey makes a key and shows it, once, on the page it answers with
// (never in a URL, never stored).
func (c *Console) createKey(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	switch refusal, err := c.spendKeyCreation(w, r, v); {
	case err != nil:
		c.serverError(w, r, err)
		return
	case refusal != "":
		c.showKeys(w, r, http.StatusTooManyRequests, keysData{}, "The key was not created. "+refusal, notice{})
		return
	}
	name := r.PostForm.Get("name")
	key, rec, err := c.svc.CreateKey(r.Context(), v.User, imagegen.WithKeyName(name))
	var verr *imagegen.ValidationError
	switch {
	case errors.As(err, &verr):
		c.showKeys(w, r, http.StatusUnprocessableEntity, keysData{}, "The key was not created: "+verr.Error(), notice{})
		return
	case err != nil:
		c.serverError(w, r, err)
		return
	}
	c.showKeys(w, r, http.StatusOK, keysData{NewKey: key, NewName: rec.Name}, "", notice{})
}

// revokeKey revokes one of the user's keys; another user's key is 404.
func (c *Console) revokeKey(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	err := c.svc.RevokeKey(r.Context(), v.User, r.PathValue("id"))
	switch {
	case errors.Is(err, imagegen.ErrKeyNotFound):
		c.notFound(w, r)
	case err != nil:
		c.serverError(w, r, err)
	default:
		http.Redirect(w, r, c.path("/keys?done=revoked"), http.StatusSeeOther)
	}
}
