package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv/pgtest"
	"github.com/imagegen/imagegen/store/postgres"
)

// A callback_url with bytes that are not UTF-8 is the client's mistake
// (a ValidationError), not PostgreSQL's encoding error on the
// callback_url column, which failed the submit as a server error.
func TestSubmitWithACallbackURLThatIsNotUTF8(t *testing.T) {
	s := pgtest.NewStore(t, pgtest.Connect(t), postgres.Config{})
	svc, err := imagegen.New(imagegen.Config{Store: s, Model: imagegentest.NewModel(1)})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := svc.Grant(ctx, "u", 10, "grant-1"); err != nil {
		t.Fatal(err)
	}
	req := imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "p", CallbackURL: "https://hooks.example/\xff"}
	var ve *imagegen.ValidationError
	if _, err := svc.Submit(ctx, "u", req); !errors.As(err, &ve) || ve.Field != "callback_url" {
		t.Fatalf("Submit: %v, want a ValidationError on callback_url", err)
	}
	if b, _ := svc.Balance(ctx, "u"); b != 10 {
		t.Errorf("balance %d, want 10", b)
	}
}
