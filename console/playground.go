package console

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
)

// playgroundData is the playground form, as typed (shown again after an
// error), and the choices it offers.
type playgroundData struct {
	Scene       string
	Prompt      string
	AspectRatio string
	ImageInput  string // one URL a line
	// Once names this rendering of the form: a second submission of it
	// (a double click, a reload that posts again) shows the task the
	// first one made instead of charging for another.
	Once    string
	Ratios  []imagegen.AspectRatio
	Balance int64
}

func (c *Console) playgroundPage(w http.ResponseWriter, r *http.Request) {
	c.showPlayground(w, r, http.StatusOK, playgroundData{Scene: string(imagegen.SceneTextToImage), AspectRatio: string(imagegen.AspectAuto), Once: uuid.NewString()}, "")
}

func (c *Console) showPlayground(w http.ResponseWriter, r *http.Request, status int, d playgroundData, errMsg string) {
	b, err := c.svc.Balance(r.Context(), viewerFrom(r.Context()).User)
	if err != nil {
		c.serverError(w, r, err)
		return
	}
	d.Balance = b
	d.Ratios = append([]imagegen.AspectRatio{imagegen.AspectAuto}, imagegen.AspectRatios()...)
	c.render(w, r, status, "playground", page{Title: "Playground", Error: errMsg, Data: d})
}

// playgroundSubmit submits the form through the Service, as the API
// would: the same validation, price and rate limit. It then shows the
// task's page, which follows it live.
func (c *Console) playgroundSubmit(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	d := playgroundData{
		Scene:       r.PostForm.Get("scene"),
		Prompt:      r.PostForm.Get("prompt"),
		AspectRatio: r.PostForm.Get("aspect_ratio"),
		ImageInput:  r.PostForm.Get("image_input"),
		Once:        r.PostForm.Get("once"),
	}
	req := imagegen.Request{Scene: imagegen.Scene(d.Scene), Prompt: d.Prompt, AspectRatio: imagegen.AspectRatio(d.AspectRatio)}
	for _, line := range strings.Split(d.ImageInput, "\n") {
		if u := strings.TrimSpace(line); u != "" {
			req.ImageInput = append(req.ImageInput, u)
		}
	}
	once, err := c.beginOnce(r, v.User, d)
	switch {
	case err != nil:
		c.serverError(w, r, err)
		return
	case once.taskID != "":
		http.Redirect(w, r, c.path("/tasks/"+once.taskID), http.StatusSeeOther)
		return
	case once.changed:
		d.Once = uuid.NewString()
		c.showPlayground(w, r, http.StatusConflict, d, "This form was already sent with other values. Check them and send it again.")
		return
	case once.running:
		c.showPlayground(w, r, http.StatusConflict, d, "This form was already sent and is still being submitted: see Tasks.")
		return
	}
	taskID, ok := c.submitPlayground(w, r, v, d, req)
	once.finish(r, taskID, ok)
	if ok {
		http.Redirect(w, r, c.path("/tasks/"+taskID), http.StatusSeeOther)
	}
}

// submitPlayground checks the rate limit and submits req; it answers
// the request itself unless it reports ok.
func (c *Console) submitPlayground(w http.ResponseWriter, r *http.Request, v viewer, d playgroundData, req imagegen.Request) (string, bool) {
	switch refusal, err := c.spendRequest(w, r, v); {
	case err != nil:
		c.serverError(w, r, err)
		return "", false
	case refusal != "":
		c.showPlayground(w, r, http.StatusTooManyRequests, d, refusal)
		return "", false
	}
	sub, err := c.svc.Submit(r.Context(), v.User, req)
	var verr *imagegen.ValidationError
	switch {
	case errors.As(err, &verr):
		c.showPlayground(w, r, http.StatusUnprocessableEntity, d, verr.Error())
		return "", false
	case errors.Is(err, imagegen.ErrInvalidParams):
		c.showPlayground(w, r, http.StatusUnprocessableEntity, d, "The request is not valid: "+err.Error())
		return "", false
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		c.showPlayground(w, r, http.StatusPaymentRequired, d, "Not enough credits for this request.")
		return "", false
	case err != nil:
		c.serverError(w, r, err)
		return "", false
	}
	return sub.TaskID, true
}

// onceTTL is how long a playground form's submission is remembered.
const onceTTL = 24 * time.Hour

// playgroundOnce is a playground form's submission, remembered in the
// store's idempotency records under the form's Once token.
type playgroundOnce struct {
	c                  *Console
	owner, key, digest string
	taskID             string // the task an earlier submission made
	running            bool   // an earlier submission is still under way
	changed            bool   // it was sent before with other values
}

// beginOnce claims the form's Once token for this submission. A form
// without a valid token (an old page) is simply submitted.
func (c *Console) beginOnce(r *http.Request, owner string, d playgroundData) (*playgroundOnce, error) {
	if uuid.Validate(d.Once) != nil {
		return &playgroundOnce{}, nil
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{d.Scene, d.Prompt, d.AspectRatio, d.ImageInput}, "\x00")))
	o := &playgroundOnce{c: c, owner: owner, key: "console-playground:" + d.Once, digest: hex.EncodeToString(sum[:])}
	rec, err := c.store.BeginIdempotent(r.Context(), owner, o.key, o.digest, time.Minute)
	switch {
	case err != nil:
		return nil, fmt.Errorf("playground once: %w", err)
	case rec == nil:
		return o, nil
	case rec.Fingerprint != o.digest:
		o.changed = true
	case rec.Done:
		o.taskID = string(rec.Body)
	default:
		o.running = true
	}
	o.key = "" // not this submission's to finish
	return o, nil
}

// finish remembers the task the submission made, or forgets the token
// when it made none (the form shown again may be sent again).
func (o *playgroundOnce) finish(r *http.Request, taskID string, ok bool) {
	if o.key == "" {
		return
	}
	ctx := context.WithoutCancel(r.Context()) // a dropped request (a double click) must still record what it made
	var err error
	if ok {
		err = o.c.store.FinishIdempotent(ctx, o.owner, o.key, o.digest, http.StatusSeeOther, []byte(taskID), onceTTL)
	} else {
		err = o.c.store.AbandonIdempotent(ctx, o.owner, o.key, o.digest)
	}
	if err != nil {
		o.c.log.WarnContext(ctx, "playground: remember the submission", "err", err)
	}
}
