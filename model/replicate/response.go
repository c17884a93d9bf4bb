package replicate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// Prediction statuses. The terminal ones are succeeded, failed, canceled
// and aborted (ended before it ever ran).
const (
	statusStarting   = "starting"
	statusProcessing = "processing"
	statusSucceeded  = "succeeded"
	statusFailed     = "failed"
	statusCanceled   = "canceled"
	statusAborted    = "aborted"
)

// prediction holds the fields of schemas_prediction_response this
// adapter reads.
type prediction struct {
	ID          string          `json:"id"`
	Model       string          `json:"model"`
	Status      string          `json:"status"`
	Output      json.RawMessage `json:"output"` // a URL, a list of URLs, or null
	Error       *string         `json:"error"`
	DataRemoved bool            `json:"data_removed"`
	URLs        struct {
		Get    string `json:"get"`
		Cancel string `json:"cancel"`
	} `json:"urls"`
}

// running reports whether the prediction may still change.
func (p *prediction) running() bool {
	return p.Status == statusStarting || p.Status == statusProcessing
}

func decodePrediction(resp *provider.Response) (*prediction, error) {
	var p prediction
	if err := provider.DecodeJSON(Provider, resp, &p); err != nil {
		return nil, err
	}
	switch p.Status {
	case statusStarting, statusProcessing, statusSucceeded, statusFailed, statusCanceled, statusAborted:
	default:
		return nil, provider.BadAnswer(Provider, true, fmt.Errorf("prediction %s has status %q", p.ID, p.Status))
	}
	if p.ID == "" {
		return nil, provider.BadAnswer(Provider, true, errors.New("the prediction has no id"))
	}
	return &p, nil
}

// outputURLs reads output: one URL or a list of them.
func (p *prediction) outputURLs() ([]string, error) {
	var one string
	if err := json.Unmarshal(p.Output, &one); err == nil && one != "" {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(p.Output, &list); err == nil && len(list) > 0 && !slices.Contains(list, "") {
		return list, nil
	}
	if p.DataRemoved || len(p.Output) == 0 || string(p.Output) == "null" {
		return nil, provider.BadAnswer(Provider, true, fmt.Errorf("prediction %s succeeded without output (data_removed %v)", p.ID, p.DataRemoved))
	}
	return nil, provider.BadAnswer(Provider, false, fmt.Errorf("prediction %s: output is neither a URL nor a list of URLs: %s", p.ID, provider.Snippet(p.Output[:min(len(p.Output), 100)])))
}

// outputs downloads every output of a prediction that succeeded,
// through the Fetcher, from the allowed hosts only.
func (m *Model) outputs(ctx context.Context, p *prediction) ([]imagegen.GeneratedImage, error) {
	urls, err := p.outputURLs()
	if err != nil {
		return nil, err
	}
	if err := provider.CheckAnswerImages(Provider, "prediction "+p.ID+" output", len(urls)); err != nil {
		return nil, err
	}
	imgs := make([]imagegen.GeneratedImage, 0, len(urls))
	for i, u := range urls {
		if err := m.allowed(u); err != nil {
			return nil, provider.BadAnswer(Provider, false, fmt.Errorf("prediction %s output %d: %w", p.ID, i, err))
		}
		img, err := provider.DownloadResult(ctx, Provider, m.cfg.Fetcher, u)
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, img)
	}
	return imgs, nil
}

// allowed checks that an output URL is http(s) on one of OutputHosts or
// their subdomains. The URL itself, signed, stays out of the error.
func (m *Model) allowed(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil {
		return errors.New("the output is not an http(s) URL")
	}
	host := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	for _, h := range m.cfg.OutputHosts {
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if host == h || strings.HasSuffix(host, "."+h) {
			return nil
		}
	}
	return fmt.Errorf("the output is on host %q, not one of %s", host, strings.Join(m.cfg.OutputHosts, ", "))
}
