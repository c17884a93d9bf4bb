// Command embed shows imagegen mounted inside an existing web app: the
// app keeps its own pages and its own login, the API sits beside them on
// the same mux under /api/v1, and the app charges web use from the same
// credit balance that API generations draw on. The web console (API keys,
// credits, tasks, playground) is mounted at /console/ behind the app's
// own session cookie.
//
//	go run ./examples/embed
//	curl -s -X POST -H 'Cookie: session=alice' -H 'Idempotency-Key: order-1' localhost:8081/poster   # web use: 1 credit, once per order
//	curl -s -H 'Cookie: session=alice' localhost:8081/balance
//	curl -s -X POST -H 'Cookie: session=alice' -H 'Content-Type: application/json' \
//	     -d '{"scene":"text-to-image","prompt":"a cat"}' localhost:8081/api/v1/generate
//	# in a browser: set the cookie session=alice for localhost:8081, open /console/
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/fetch"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/model/placeholder"
	"github.com/imagegen/imagegen/server"
	"github.com/imagegen/imagegen/store/memory"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	app, err := newApp(ctx, "http://127.0.0.1:8081", imagegen.Config{})
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = app.images.Run(ctx) }() // workers and callbacks
	srv := &http.Server{Addr: "127.0.0.1:8081", Handler: app.mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Shutdown(context.Background()) }()
	log.Println("listening on http://127.0.0.1:8081")
	if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// app is an existing web app that adds image generation.
type app struct {
	images *server.Server
	svc    *imagegen.Service
	store  imagegen.Store // the service's: the console keeps its sessions there
	mux    *http.ServeMux
}

// newApp wires imagegen into the app: one server.New call, with the
// app's own login in front of the API. tune lets a test adjust the
// service (callbacks to loopback, say).
func newApp(ctx context.Context, publicURL string, tune imagegen.Config) (*app, error) {
	fetcher, err := fetch.New(fetch.Config{AllowPrivate: tune.AllowHTTPCallbacks})
	if err != nil {
		return nil, err
	}
	model, err := placeholder.New(placeholder.Config{Fetcher: fetcher, LongSide: 256})
	if err != nil {
		return nil, err
	}
	store, err := memory.New(memory.Config{})
	if err != nil {
		return nil, err
	}
	tune.Store, tune.Model = store, model
	tune.ImageInputGuard = fetcher // image_input URLs the model's fetcher plainly refuses: 422 at submit
	images, err := server.New(ctx, server.Config{
		Service:   tune,
		PublicURL: publicURL,
		// The app's own login first; API keys work too.
		Login: httpapi.AuthenticatorFunc(func(r *http.Request) (httpapi.Principal, error) {
			if user, ok := sessionUser(r); ok {
				return httpapi.Principal{Owner: user}, nil // one rate limit per user
			}
			return httpapi.Principal{}, imagegen.ErrUnauthorized
		}),
	})
	if err != nil {
		return nil, err
	}
	a := &app{images: images, svc: images.Service(), store: tune.Store, mux: http.NewServeMux()}
	// The app's own users get their sign-up credits through the ledger.
	for _, user := range []string{"alice", "bob"} {
		if _, err := a.svc.Grant(ctx, user, 20, "signup"); err != nil {
			return nil, err
		}
	}
	images.Register(a.mux)
	// The console, behind the app's own login: Identify names the user of
	// a request from the app's session cookie.
	con, err := console.New(ctx, console.Config{
		Service: a.svc,
		Store:   a.store,          // sessions and the session secret
		API:     images.API(),     // signed image URLs
		Limiter: images.Limiter(), // the playground counts in the API's rate limit
		Prefix:  "/console",
		Identify: func(r *http.Request) (string, bool, error) {
			user, ok := sessionUser(r)
			if !ok {
				return "", false, nil // not signed in: the console answers 401
			}
			return user, user == "alice", nil // alice is also an operator
		},
	})
	if err != nil {
		return nil, err
	}
	a.mux.Handle("/console/", con)
	a.mux.HandleFunc("GET /{$}", a.home)
	a.mux.HandleFunc("POST /poster", a.buyPoster)
	a.mux.HandleFunc("GET /balance", a.balance)
	return a, nil
}

// sessionUser stands in for the app's real session handling.
func sessionUser(r *http.Request) (string, bool) {
	c, err := r.Cookie("session")
	if err != nil || (c.Value != "alice" && c.Value != "bob") {
		return "", false
	}
	return c.Value, true
}

func (a *app) home(w http.ResponseWriter, r *http.Request) {
	fmt.Fprintln(w, "Welcome to the poster shop. POST /poster to buy a print (1 credit).")
}

// buyPoster is web use: it charges the same balance that API generations
// use. The request's idempotency key makes a retried click charge once.
func (a *app) buyPoster(w http.ResponseWriter, r *http.Request) {
	user, ok := sessionUser(r)
	if !ok {
		http.Error(w, "please log in", http.StatusUnauthorized)
		return
	}
	res, err := a.svc.ChargeWeb(r.Context(), user, 1, r.Header.Get("Idempotency-Key"))
	switch {
	case errors.Is(err, imagegen.ErrInsufficientCredits):
		http.Error(w, "not enough credits", http.StatusPaymentRequired)
	case errors.Is(err, imagegen.ErrInvalidParams):
		http.Error(w, "send an Idempotency-Key header with each order", http.StatusBadRequest)
	case err != nil:
		http.Error(w, "something went wrong", http.StatusInternalServerError)
	case res.AlreadyApplied:
		fmt.Fprintf(w, "already charged; %d credits left\n", res.Balance)
	default:
		fmt.Fprintf(w, "poster ordered; %d credits left\n", res.Balance)
	}
}

func (a *app) balance(w http.ResponseWriter, r *http.Request) {
	user, ok := sessionUser(r)
	if !ok {
		http.Error(w, "please log in", http.StatusUnauthorized)
		return
	}
	b, err := a.svc.Balance(r.Context(), user)
	if err != nil {
		http.Error(w, "something went wrong", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "%d\n", b)
}
