package comfyui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/google/uuid"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/model/provider"
)

// uploaded is the answer of POST /upload/image.
type uploaded struct {
	Name      string `json:"name"`
	Subfolder string `json:"subfolder"`
	Type      string `json:"type"`
}

// upload sends each reference to ComfyUI's input folder under a name of
// this generation's (overwrite: a retried attempt replaces its own
// file), and returns the names LoadImage takes (subfolder/name).
func (m *Model) upload(ctx context.Context, g imagegen.Generation, refs []provider.Reference) ([]string, error) {
	names := make([]string, 0, len(refs))
	for i, ref := range refs {
		file := fmt.Sprintf("imagegen-%s-%d-%d.%s", safeName(g.TaskID), g.Attempt, i, provider.FileExtension(ref.ContentType))
		post, err := provider.PostForm(m.client.URL("/upload/image"),
			[]provider.FormField{{Name: "type", Value: "input"}, {Name: "overwrite", Value: "true"}},
			[]provider.FormFile{{Name: "image", Filename: file, ContentType: ref.ContentType, Data: ref.Data}}, m.header())
		if err != nil {
			return nil, provider.BadAnswer(Provider, false, err)
		}
		// Sending the file again under its fixed name, with overwrite,
		// only replaces it: safe to repeat after an answer lost in
		// transit, unlike POST /prompt, which would queue a second run.
		resp, err := m.client.Do(ctx, provider.Replayable(post))
		if err != nil {
			return nil, err
		}
		var u uploaded
		if err := provider.DecodeJSON(Provider, resp, &u); err != nil {
			return nil, err
		}
		if u.Name == "" || strings.ContainsAny(u.Name, "\r\n") {
			return nil, provider.BadAnswer(Provider, true, fmt.Errorf("the upload of reference %d answered no name", i))
		}
		name := u.Name
		if u.Subfolder != "" {
			name = u.Subfolder + "/" + u.Name
		}
		names = append(names, name)
	}
	return names, nil
}

// safeName keeps letters, digits, '-' and '_' of s, for a file name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' {
			return r
		}
		return '_'
	}, s)
}

// promptRequest is the body of POST /prompt. PromptID is the adapter's
// own (a fresh UUID, in the canonical lowercase form the newest servers
// require): servers since 0.3.45 queue the prompt under it, older ones
// ignore it and answer an id of theirs.
type promptRequest struct {
	Prompt   map[string]any `json:"prompt"`
	ClientID string         `json:"client_id"`
	PromptID string         `json:"prompt_id"`
}

// promptResponse is the answer of POST /prompt: 200 with the prompt's
// id, its place and the errors of outputs that will not run; 400 with
// error and node_errors.
type promptResponse struct {
	PromptID   string          `json:"prompt_id"`
	Number     float64         `json:"number"`
	NodeErrors json.RawMessage `json:"node_errors"`
}

// queue sends the workflow, and returns the id the server answered (its
// own, on a server that ignores the adapter's). A workflow ComfyUI
// refuses (400) is the operator's configuration error, as one it takes
// with node_errors (outputs that will not run): that one is taken off
// the queue again. A prompt the server may have queued though its answer
// was lost is stopped (lost).
func (m *Model) queue(ctx context.Context, prompt map[string]any, clientID string) (string, error) {
	promptID := uuid.NewString()
	post, err := provider.PostJSON(m.client.URL("/prompt"), promptRequest{Prompt: prompt, ClientID: clientID, PromptID: promptID}, m.header())
	if err != nil {
		return "", &imagegen.ModelError{Provider: Provider, Misconfigured: true, Message: provider.MsgMisconfigured, Err: err}
	}
	resp, err := m.client.Do(ctx, post)
	if err != nil {
		if errors.Is(err, provider.ErrMaybeAccepted) || ctx.Err() != nil {
			return "", m.lost(ctx, promptID, clientID, err)
		}
		return "", err
	}
	// A 2xx: the server queued the prompt before it answered.
	var p promptResponse
	if err := provider.DecodeJSON(Provider, resp, &p); err != nil {
		return "", m.lost(ctx, promptID, clientID, err)
	}
	if p.PromptID == "" {
		return "", m.lost(ctx, promptID, clientID, provider.BadAnswer(Provider, true, errors.New("POST /prompt answered no prompt_id")))
	}
	if errs := nodeErrors(p.NodeErrors); errs != "" {
		cerr := m.dequeue(ctx, p.PromptID)
		return "", &imagegen.ModelError{Provider: Provider, Misconfigured: true, Message: provider.MsgMisconfigured,
			Err: fmt.Errorf("the workflow has node errors: %s (prompt %s taken off the queue: %v)", errs, p.PromptID, cmpErr(cerr))}
	}
	return p.PromptID, nil
}

func cmpErr(err error) any {
	if err == nil {
		return "ok"
	}
	return err
}

// nodeError is one node's entry of node_errors.
type nodeError struct {
	ClassType string `json:"class_type"`
	Errors    []struct {
		Type    string `json:"type"`
		Message string `json:"message"`
		Details string `json:"details"`
	} `json:"errors"`
}

// nodeErrors is node_errors on one line ("" when empty): each node's
// class and errors.
func nodeErrors(raw json.RawMessage) string {
	var byNode map[string]nodeError
	if json.Unmarshal(raw, &byNode) != nil || len(byNode) == 0 {
		return ""
	}
	var parts []string
	for id, n := range byNode {
		for _, e := range n.Errors {
			parts = append(parts, fmt.Sprintf("node %s (%s): %s: %s", id, n.ClassType, e.Message, e.Details))
		}
		if len(n.Errors) == 0 {
			parts = append(parts, fmt.Sprintf("node %s (%s)", id, n.ClassType))
		}
	}
	return strings.Join(parts, "; ")
}

// viewURL is where an output image is read.
func (m *Model) viewURL(img outputImage) string {
	q := url.Values{"filename": {img.Filename}, "subfolder": {img.Subfolder}, "type": {img.Type}}
	return m.client.URL("/view?" + q.Encode())
}
