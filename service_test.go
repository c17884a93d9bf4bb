package imagegen_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/matryer/is"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/store/memory"
)

func TestConfigValidation(t *testing.T) {
	is := is.New(t)
	_, err := imagegen.New(imagegen.Config{Model: imagegentest.NewModel(1)})
	is.True(err != nil) // no store
	store := testenv.Memory(t, memory.Config{})
	_, err = imagegen.New(imagegen.Config{Store: store})
	is.True(err != nil) // no model
	_, err = imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1), WorkerConfig: imagegen.WorkerConfig{Workers: -1}})
	is.True(err != nil)
	_, err = imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1)})
	is.NoErr(err)
}

func TestSubmitChargesThePlannedPrice(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(3))
	f.funded(t, "u", 7)
	sub := f.submit(t, "u")
	is.Equal(sub.Status, imagegen.StatusPending)
	is.Equal(sub.CreditsUsed, int64(3))
	is.Equal(sub.CreditsRemaining, int64(4))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Model, "scripted")
	is.Equal(task.Cost, int64(3))
	is.Equal(task.Request.AspectRatio, imagegen.AspectAuto) // normalised

	f.submit(t, "u")
	_, err := f.svc.Submit(ctx, "u", textReq)
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	is.Equal(f.balance(t, "u"), int64(1))

	_, err = f.svc.Submit(ctx, "u", imagegen.Request{Scene: "bogus", Prompt: "x"})
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
}

func TestSubmitRefusesAnOutOfRangePrice(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(4))
	f.funded(t, "u", 10)
	_, err := f.svc.Submit(ctx, "u", textReq)
	is.True(err != nil)
	is.True(!errors.Is(err, imagegen.ErrInvalidParams)) // the operator's mistake, not the client's
	is.Equal(f.balance(t, "u"), int64(10))
}

func TestCredits(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	r, err := f.svc.Grant(ctx, "u", 5, "signup")
	is.NoErr(err)
	is.Equal(r, imagegen.LedgerResult{Balance: 5})
	r, err = f.svc.Grant(ctx, "u", 5, "signup")
	is.NoErr(err) // idempotent: a no-op that says so
	is.Equal(r, imagegen.LedgerResult{Balance: 5, AlreadyApplied: true})
	r, err = f.svc.ChargeWeb(ctx, "u", 2, "page-view-1")
	is.NoErr(err)
	is.Equal(r, imagegen.LedgerResult{Balance: 3})
	r, err = f.svc.ChargeWeb(ctx, "u", 2, "page-view-1")
	is.NoErr(err)
	is.Equal(r, imagegen.LedgerResult{Balance: 3, AlreadyApplied: true})
	r, err = f.svc.ChargeWeb(ctx, "u", 1, "signup") // kinds have their own references
	is.NoErr(err)
	is.Equal(r, imagegen.LedgerResult{Balance: 2})
	_, err = f.svc.ChargeWeb(ctx, "u", 4, "page-view-2")
	is.True(errors.Is(err, imagegen.ErrInsufficientCredits))
	_, err = f.svc.ChargeWeb(ctx, "u", 0, "page-view-3")
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	for _, ref := range []string{"", strings.Repeat("r", imagegen.MaxLedgerRefLength+1)} {
		_, err = f.svc.ChargeWeb(ctx, "u", 1, ref) // no reference: refused, not charged
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
		_, err = f.svc.Grant(ctx, "u", 1, ref)
		is.True(errors.Is(err, imagegen.ErrInvalidParams))
	}
	is.Equal(f.balance(t, "u"), int64(2))
	_, err = f.svc.Grant(ctx, "u", -1, uuid.NewString())
	is.True(errors.Is(err, imagegen.ErrInvalidParams))

	// Web use and API use share the balance.
	f.submit(t, "u")
	ledger, err := f.svc.Ledger(ctx, "u")
	is.NoErr(err)
	var sum int64
	for _, e := range ledger {
		sum += e.Amount
	}
	is.Equal(sum, f.balance(t, "u"))
	is.Equal(sum, int64(1))
	is.Equal(len(ledger), 4) // grant, web, web, charge
}

func TestKeys(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(1))
	key, rec, err := f.svc.CreateKey(ctx, "u")
	is.NoErr(err)
	got, err := f.svc.Authenticate(ctx, key)
	is.NoErr(err)
	is.Equal(got.Owner, "u")
	is.Equal(got.ID, rec.ID)

	_, err = f.svc.ImportKey(ctx, "v", "short")
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	_, err = f.svc.ImportKey(ctx, "v", "igk_looks-generated-but-is-not")
	is.True(errors.Is(err, imagegen.ErrInvalidParams))
	_, err = f.svc.ImportKey(ctx, "v", "demo-key-for-v-0001")
	is.NoErr(err)
	got, err = f.svc.Authenticate(ctx, "demo-key-for-v-0001")
	is.NoErr(err)
	is.Equal(got.Owner, "v")

	keys, err := f.svc.Keys(ctx, "u")
	is.NoErr(err)
	is.Equal(len(keys), 1)
	is.True(keys[0].Hash != key) // only the hash is stored
	is.NoErr(f.svc.RevokeKey(ctx, "u", rec.ID))
	_, err = f.svc.Authenticate(ctx, key)
	is.True(errors.Is(err, imagegen.ErrUnauthorized))
	_, err = f.svc.Authenticate(ctx, "")
	is.True(errors.Is(err, imagegen.ErrUnauthorized))
}

func TestCancel(t *testing.T) {
	is := is.New(t)
	f := newFixture(t, imagegentest.NewModel(2))
	f.funded(t, "u", 2)
	sub := f.submit(t, "u")
	is.True(errors.Is(f.svc.Cancel(ctx, "other", sub.TaskID), imagegen.ErrTaskNotFound))
	is.NoErr(f.svc.Cancel(ctx, "u", sub.TaskID))
	task := f.task(t, "u", sub.TaskID)
	is.Equal(task.Status, imagegen.StatusFailed)
	is.Equal(f.balance(t, "u"), int64(2))
	is.True(errors.Is(f.svc.Cancel(ctx, "u", sub.TaskID), imagegen.ErrInvalidTransition))
}

// A cursor the store does not know is the client's mistake on every
// list: a ValidationError on "cursor", not a server error.
func TestListsRefuseUnknownCursors(t *testing.T) {
	f := newFixture(t, imagegentest.NewModel(1))
	f.funded(t, "u", 1)
	lists := map[string]func(cursor string) error{
		"tasks": func(c string) error {
			_, err := f.svc.ListTasks(ctx, "u", "", 10, c)
			return err
		},
		"ledger": func(c string) error {
			_, err := f.svc.ListLedger(ctx, "u", 10, c)
			return err
		},
		"all tasks": func(c string) error {
			_, err := f.svc.Inspector().ListTasks(ctx, imagegen.TaskFilter{}, 10, c)
			return err
		},
	}
	for name, list := range lists {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			is.NoErr(list("")) // first page
			for _, cursor := range []string{"not-a-cursor", strings.Repeat("c", 257)} {
				var ve *imagegen.ValidationError
				is.True(errors.As(list(cursor), &ve))
				is.Equal(ve.Field, "cursor")
			}
		})
	}
}
