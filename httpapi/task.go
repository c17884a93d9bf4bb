package httpapi

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/wire"
)

// handleTask serves GET {prefix}/tasks/{task_id} (docs/api.md, "Query a task").
// With "Prefer: wait=N" (RFC 7240, N up to 60) it answers as soon as the
// task is finished, or after N seconds with its state then, and says so
// with "Preference-Applied: wait=N" (only on a task answer: an error
// answer applied no preference). The request counts once against the
// rate limit however long it waits. One owner holds at most
// Config.MaxWaitsPerOwner waits at once; one more is answered at once,
// without Preference-Applied. Drain cuts open waits short. With
// ?view=full the task carries wire.TaskDetails (timing, model, seed, queue
// position); other query parameters are ignored, as they always were.
func (h *Handler) handleTask() http.Handler {
	return userJSON(h, http.StatusOK, func(w http.ResponseWriter, r *http.Request, owner string) (wire.TaskBody, error) {
		id := r.PathValue("task_id")
		w.Header()["Vary"] = varyPrefer
		view, err := viewOf(r)
		if err != nil {
			return wire.TaskBody{}, err
		}
		var t *imagegen.Task
		wait, waited := preferWait(r.Header[preferHeader])
		if waited && wait > 0 {
			if h.waits.Take(owner) {
				defer h.waits.Give(owner) // on a panic or a hang-up too
			} else {
				waited = false // the owner holds Config.MaxWaitsPerOwner waits: answered at once, preference not applied
			}
		}
		if waited {
			t, err = h.waitTask(r, owner, id, time.Duration(wait)*time.Second)
		} else {
			t, err = h.cfg.Service.Task(r.Context(), owner, id)
		}
		if err != nil {
			return wire.TaskBody{}, err // an error answer applied no preference
		}
		body := h.taskBody(r, t)
		if view == ViewFull {
			positions, err := h.cfg.Service.QueuePositions(r.Context(), []*imagegen.Task{t})
			if err != nil {
				return wire.TaskBody{}, err
			}
			body.TaskDetails = detailsOf(t, positions[0], h.cfg.Service.EstimatedStarts(r.Context(), positions)[0])
		}
		if waited {
			w.Header().Set("Preference-Applied", "wait="+strconv.Itoa(wait))
		}
		return body, nil
	})
}

func (h *Handler) taskBody(r *http.Request, t *imagegen.Task) wire.TaskBody {
	body := wire.TaskBody{TaskID: t.ID, Status: t.Status}
	switch t.Status {
	case imagegen.StatusSuccess:
		body.Images = make([]string, len(t.Images))
		for i, id := range t.Images {
			body.Images[i] = h.imageURL(r, id, t.ExpiresAt.Unix())
		}
	case imagegen.StatusFailed:
		body.Error, body.ErrorCode = t.Error, t.ErrorCode
		if body.Error == "" {
			body.Error = "image generation failed"
		}
		if body.ErrorCode == "" {
			body.ErrorCode = imagegen.CodeInternal
		}
	}
	return body
}

// ImageURLs returns the signed, expiring URLs of a successful task's
// images, as the API shows them, for a host app's own pages (an <img> tag
// needs no key). They start with Config.PublicURL; without it they are
// path-absolute ("/api/v1/images/…"), which works on pages served by the
// same host. Other tasks have none.
func (h *Handler) ImageURLs(t *imagegen.Task) []string {
	if t == nil || t.Status != imagegen.StatusSuccess {
		return nil
	}
	urls := make([]string, len(t.Images))
	for i, id := range t.Images {
		urls[i] = h.signedImageURL(h.cfg.PublicURL, id, t.ExpiresAt.Unix())
	}
	return urls
}

// imageURL is the absolute, signed, expiring URL of an image. Without
// Config.PublicURL its scheme and host are the request's (its Host
// header): set PublicURL on a server reached through names you do not
// control.
func (h *Handler) imageURL(r *http.Request, id string, expires int64) string {
	base := h.cfg.PublicURL
	if base == "" {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		base = scheme + "://" + r.Host
	}
	return h.signedImageURL(base, id, expires)
}

func (h *Handler) signedImageURL(base, id string, expires int64) string {
	exp := strconv.FormatInt(expires, 10)
	return base + h.cfg.Prefix + "/images/" + url.PathEscape(id) + "?expires=" + exp + "&sig=" + h.signer.sign(id, expires)
}

// preferWait reads the wait preference (RFC 7240) from Prefer headers, in
// whole seconds, capped at imagegen.MaxWait. ok is false without one.
func preferWait(headers []string) (seconds int, ok bool) {
	for _, h := range headers {
		for _, pref := range strings.Split(h, ",") {
			token, _, _ := strings.Cut(pref, ";") // parameters of a preference are ignored
			name, value, _ := strings.Cut(strings.TrimSpace(token), "=")
			if !strings.EqualFold(strings.TrimSpace(name), "wait") {
				continue
			}
			n, err := strconv.Atoi(strings.Trim(strings.TrimSpace(value), `"`))
			if err != nil || n < 0 {
				return 0, false // a malformed preference is ignored, as RFC 7240 asks
			}
			return min(n, int(imagegen.MaxWait/time.Second)), true
		}
	}
	return 0, false
}
