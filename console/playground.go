package console

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"

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
// would: the same validation, price, rate limit and idempotency
// (Service.SubmitIdempotent, keyed by the form's Once token, so a form
// sent twice makes one task). It then shows the task's page, which
// follows it live.
func (c *Console) playgroundSubmit(w http.ResponseWriter, r *http.Request) {
	v := viewerFrom(r.Context())
	d := playgroundData{
		Scene:       r.PostForm.Get("scene"),
		Prompt:      r.PostForm.Get("prompt"),
		AspectRatio: r.PostForm.Get("aspect_ratio"),
		ImageInput:  r.PostForm.Get("image_input"),
		Once:        r.PostForm.Get("once"),
	}
	sub, _, err := c.svc.SubmitIdempotent(r.Context(), v.User, onceOf(d), func() (imagegen.Request, error) {
		// Runs only for a form not sent before: a resent one spends
		// nothing of the rate limit.
		switch refusal, err := c.spendRequest(w, r, v); {
		case err != nil:
			return imagegen.Request{}, err
		case refusal != "":
			return imagegen.Request{}, limited(refusal)
		}
		req := imagegen.Request{Scene: imagegen.Scene(d.Scene), Prompt: d.Prompt, AspectRatio: imagegen.AspectRatio(d.AspectRatio)}
		for _, line := range strings.Split(d.ImageInput, "\n") {
			if u := strings.TrimSpace(line); u != "" {
				req.ImageInput = append(req.ImageInput, u)
			}
		}
		return req, nil
	})
	if err == nil {
		http.Redirect(w, r, c.path("/tasks/"+sub.TaskID), http.StatusSeeOther)
		return
	}
	var refusal limited
	var verr *imagegen.ValidationError
	switch {
	case errors.As(err, &refusal):
		c.showPlayground(w, r, http.StatusTooManyRequests, d, string(refusal))
	case errors.Is(err, imagegen.ErrIdempotencyKeyReused):
		d.Once = uuid.NewString()
		c.showPlayground(w, r, http.StatusConflict, d, "This form was already sent with other values. Check them and send it again.")
	case errors.Is(err, imagegen.ErrIdempotencyKeyInUse):
		c.showPlayground(w, r, http.StatusConflict, d, "This form was already sent and is still being submitted: see Tasks.")
	case errors.As(err, &verr):
		d.Once = uuid.NewString() // the corrected form is a new one (a server before this one kept the refusal for the old token)
		c.showPlayground(w, r, http.StatusUnprocessableEntity, d, verr.Error())
	case errors.Is(err, imagegen.ErrInvalidParams):
		d.Once = uuid.NewString()
		c.showPlayground(w, r, http.StatusUnprocessableEntity, d, "The request is not valid: "+err.Error())
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		c.showPlayground(w, r, http.StatusPaymentRequired, d, "Not enough credits for this request.")
	case errors.Is(err, imagegen.ErrQueueFull):
		d.Once = uuid.NewString() // a later send may go through
		c.showPlayground(w, r, http.StatusTooManyRequests, d, "Your queue is full: wait for some of your tasks to start, then send it again.")
	default:
		c.serverError(w, r, err)
	}
}

// limited is the rate limit's refusal of a form, for the person.
type limited string

func (l limited) Error() string { return string(l) }

// onceOf is the idempotency of a playground form: its Once token, and a
// digest of its values. A form without a valid token (an old page) is
// simply submitted.
func onceOf(d playgroundData) imagegen.Idempotency {
	if uuid.Validate(d.Once) != nil {
		return imagegen.Idempotency{}
	}
	sum := sha256.Sum256([]byte(strings.Join([]string{d.Scene, d.Prompt, d.AspectRatio, d.ImageInput}, "\x00")))
	return imagegen.Idempotency{Key: "console-playground:" + d.Once, Fingerprint: hex.EncodeToString(sum[:])}
}
