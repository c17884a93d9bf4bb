package client_test

import (
	"net/http/httptest"
	"testing"

	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/client"
	"github.com/imagegen/imagegen/webhook"
)

func TestWebhookEvent(t *testing.T) {
	is := is.New(t)
	r := httptest.NewRequest("POST", "/hooks", nil)
	is.Equal(client.WebhookEvent(r), imagegen.EventCompleted) // no header: a server that sends only completed
	r.Header.Set(webhook.HeaderEvent, "processing")
	is.Equal(client.WebhookEvent(r), imagegen.EventProcessing)
	r.Header.Set(webhook.HeaderEvent, "completed")
	is.Equal(client.WebhookEvent(r), imagegen.EventCompleted)
}
