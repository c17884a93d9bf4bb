package console

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
)

// playgroundData is the playground form, as typed (shown again after an
// error), and the choices it offers.
type playgroundData struct {
	Scene       string
	Prompt      string
	AspectRatio string
	ImageInput  string // one URL a line
	Ratios      []imagegen.AspectRatio
	Balance     int64
}

func (c *Console) playgroundPage(w http.ResponseWriter, r *http.Request) {
	c.showPlayground(w, r, http.StatusOK, playgroundData{Scene: string(imagegen.SceneTextToImage), AspectRatio: string(imagegen.AspectAuto)}, "")
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
	}
	req := imagegen.Request{Scene: imagegen.Scene(d.Scene), Prompt: d.Prompt, AspectRatio: imagegen.AspectRatio(d.AspectRatio)}
	for _, line := range strings.Split(d.ImageInput, "\n") {
		if u := strings.TrimSpace(line); u != "" {
			req.ImageInput = append(req.ImageInput, u)
		}
	}
	if c.cfg.Limiter != nil {
		res, err := c.cfg.Limiter.Allow(r.Context(), v.RateKey)
		if err != nil {
			c.serverError(w, r, fmt.Errorf("rate limit: %w", err))
			return
		}
		if !res.Allowed {
			wait := max(res.RetryAfter.Round(time.Second), time.Second)
			c.showPlayground(w, r, http.StatusTooManyRequests, d,
				fmt.Sprintf("Too many requests: the limit is %d a %s, shared with your API use. Try again in %s.", res.Limit, res.Window, wait))
			return
		}
	}
	sub, err := c.svc.Submit(r.Context(), v.User, req)
	var verr *imagegen.ValidationError
	switch {
	case errors.As(err, &verr):
		c.showPlayground(w, r, http.StatusUnprocessableEntity, d, verr.Error())
		return
	case errors.Is(err, imagegen.ErrInvalidParams):
		c.showPlayground(w, r, http.StatusUnprocessableEntity, d, "The request is not valid: "+err.Error())
		return
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		c.showPlayground(w, r, http.StatusPaymentRequired, d, "Not enough credits for this request.")
		return
	case err != nil:
		c.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, c.path("/tasks/"+sub.TaskID), http.StatusSeeOther)
}
