package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/console"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/coarsedeadline"
	"github.com/imagegen/imagegen/internal/gcfloor"
	"github.com/imagegen/imagegen/internal/weburl"
	"github.com/imagegen/imagegen/server"
)

type serveConfig struct {
	runtimeConfig
	addr        string
	publicURL   string
	demoKeys    stringList
	demoCredits int64
	rateLimit   int
	signingKey  string
	imageBase   string
	presignTTL  time.Duration
	// trustedProxies are the reverse proxies whose forwardedHeader
	// names the client.
	trustedProxies  prefixList
	forwardedHeader string
	// console mounts the web console at /console/; operators are the
	// owners who see its operator pages.
	console   bool
	operators stringList
	// storeWaits bounds the downloads waiting for the image store.
	storeWaits int
	// waitsPerUser bounds one user's long waits (0: no bound).
	waitsPerUser int
	// openAI is where the OpenAI-compatible endpoint is served ("" for off).
	openAI string
	// maxConns and maxConnsPerAddr bound the open HTTP connections, in
	// all and from one client address (limitConns).
	maxConns        int
	maxConnsPerAddr int
	// webhookSecretGrace is how long a rotated webhook secret still
	// signs deliveries (imagegen.Config.WebhookSecretGrace).
	webhookSecretGrace time.Duration
}

// serveFlags is serve's flag set, filling c.
func serveFlags(c *serveConfig, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("serve", stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&c.publicURL, "public-url", "", "base of image URLs, e.g. https://img.example.com (default: http://<addr>)")
	fs.Var(&c.demoKeys, "demo-key", "API key of a demo user, at least 16 characters (repeatable; each key gets its own user; default: on the memory store, one demo user whose generated key is printed at start, on a shared store none)")
	fs.Int64Var(&c.demoCredits, "demo-credits", 100, "credits granted to each demo user")
	fs.IntVar(&c.rateLimit, "rate-limit", 10, "requests per API key per rolling minute")
	fs.StringVar(&c.signingKey, "signing-key", "", "secret for signing image URLs, at least 16 bytes (default: one kept in the store, shared by every process on a shared store)")
	fs.StringVar(&c.imageBase, "image-base-url", "", "redirect image downloads to this CDN base URL + /<image id> (its origin serves the -blobs store's objects), so the bytes never pass through this process")
	fs.DurationVar(&c.presignTTL, "image-presign", 0, "redirect image downloads to presigned object-store URLs valid this long, e.g. 10m, or until the image expires if sooner (needs -blobs s3://...); 0 streams them through this process")
	fs.IntVar(&c.storeWaits, "image-store-waits", httpapi.DefaultMaxStoreWaits, "most image downloads waiting for the image store at once; more are refused at once with 503 and Retry-After")
	fs.IntVar(&c.waitsPerUser, "max-waits-per-user", httpapi.DefaultMaxWaitsPerOwner, "most long waits one user holds open at once in this process (GET /api/v1/tasks/{id} with Prefer: wait, and OpenAI-compatible requests, whatever keys they use); one more poll is answered at once without waiting, one more OpenAI request is refused with 429 and Retry-After, charged nothing (0: no cap)")
	fs.Var(&c.trustedProxies, "trusted-proxy", "CIDR (or address) of a reverse proxy whose -forwarded-header names the client, for the per-address limit on failed logins; its connections are not bounded by -max-conns-per-addr (repeatable; default: none, the client is the peer address)")
	fs.StringVar(&c.forwardedHeader, "forwarded-header", "X-Forwarded-For", "the header the trusted proxies write the client's address into: X-Forwarded-For or Forwarded (only that one is read)")
	fs.IntVar(&c.maxConns, "max-conns", 0, "most HTTP connections open at once; more wait in the listen backlog until one closes (0: three quarters of the process's open-file limit, so that file descriptors stay for the store's connections)")
	fs.IntVar(&c.maxConnsPerAddr, "max-conns-per-addr", 512, "most HTTP connections open at once from one public client address (an IPv6 client by its /64); one more is answered 503 with Retry-After and closed. Loopback, private and link-local addresses, where a reverse proxy usually is, and -trusted-proxy peers are not bounded (0: no bound)")
	fs.BoolVar(&c.console, "console", true, "serve the web console at /console/ (users sign in with one of their API keys); -console=false turns it off")
	fs.Var(&c.operators, "operator", "owner who may see the console's operator pages (repeatable)")
	fs.StringVar(&c.openAI, "openai-prefix", "/v1", `where the OpenAI-compatible POST <prefix>/images/generations is served ("" turns it off)`)
	fs.DurationVar(&c.webhookSecretGrace, "webhook-secret-grace", imagegen.DefaultWebhookSecretGrace, "after POST /api/v1/webhook-secret/rotate, how long deliveries are still signed with the replaced secret too, so receivers can move to the new one (at least 1s)")
	c.runtimeConfig.register(fs, 4, "shared by every process; with neither -redis nor -postgres, state stays in this process")
	secretFiles(fs, "demo-key", "signing-key")
	return fs
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	var c serveConfig
	fs := serveFlags(&c, stderr)
	if err := parseFlags(fs, args, getenv); err != nil {
		return c, err
	}
	switch {
	case c.demoCredits < 0:
		return c, errors.New("-demo-credits must not be negative")
	case c.rateLimit < 1:
		return c, errors.New("-rate-limit must be at least 1")
	case c.publicURL != "" && !weburl.Absolute(c.publicURL):
		return c, errors.New("-public-url must be an absolute http(s) URL such as https://img.example.com")
	case c.presignTTL < 0:
		return c, errors.New("-image-presign must not be negative")
	case c.storeWaits < 1:
		return c, errors.New("-image-store-waits must be at least 1")
	case c.waitsPerUser < 0:
		return c, errors.New("-max-waits-per-user must not be negative (0: no cap)")
	case c.maxConns < 0 || c.maxConnsPerAddr < 0:
		return c, errors.New("-max-conns and -max-conns-per-addr must not be negative (0: the default bound, and no bound per address)")
	case c.presignTTL > 0 && c.imageBase != "":
		return c, errors.New("-image-presign and -image-base-url are two ways to redirect downloads: choose one")
	case c.presignTTL > 0 && !strings.HasPrefix(c.blobsURL, "s3:"):
		return c, errors.New("-image-presign needs -blobs s3://... (only object storage presigns URLs)")
	case c.imageBase != "" && !weburl.Absolute(c.imageBase):
		return c, errors.New("-image-base-url must be an absolute http(s) URL such as https://cdn.example.com/images")
	case c.openAI != "" && (!strings.HasPrefix(c.openAI, "/") || strings.TrimSuffix(c.openAI, "/") == "/api/v1"):
		return c, errors.New(`-openai-prefix must be a path such as /v1, other than /api/v1, or "" to turn it off`)
	case c.signingKey != "" && len(c.signingKey) < 16:
		return c, errors.New("-signing-key must be at least 16 bytes")
	case c.webhookSecretGrace < time.Second:
		return c, errors.New("-webhook-secret-grace must be at least 1s")
	}
	return c, c.runtimeConfig.validate()
}

// maxHeaderBytes bounds a request's header block (net/http's default is
// 1 MiB): with -max-conns-per-addr connections from one address, each
// may hold this much for the 10 s header timeout. API clients send a few
// hundred bytes; a host app's cookies stay well under it.
const maxHeaderBytes = 64 << 10

// serve runs the API and workers on the memory store (or a shared one,
// with -redis or -postgres) and the model of -model until ctx ends, then shuts down
// gracefully.
func serve(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseServe(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	defer gcfloor.Keep(c.gcFloorMiB << 20)()
	log, logs := c.logger(stderr)
	defer logs.Close() // last: the buffered lines of the shutdown too

	rt, err := openRuntime(ctx, c.runtimeConfig, c.rateLimit, getenv, log)
	if err != nil {
		return err
	}
	defer rt.close()
	obs := rt.obs
	rt.service.WebhookSecretGrace = c.webhookSecretGrace // rotations are served here, not by workers

	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		return err
	}
	publicURL := c.publicURL
	if publicURL == "" {
		publicURL = "http://" + displayAddr(ln.Addr())
	}
	stack, err := server.New(ctx, server.Config{
		Service:          rt.service,
		PublicURL:        publicURL,
		Limiter:          rt.limiter,
		AuthFailures:     rt.authFailures,
		TrustedProxies:   c.trustedProxies,
		ForwardedHeader:  c.forwardedHeader,
		OpenAIPrefix:     c.openAI,
		OpenAIModels:     modelIDs(c.model),
		SigningKey:       []byte(c.signingKey), // empty: one kept in the store, shared by every process on it
		NoWorkers:        c.workers == 0,       // -workers 0: this process serves the API only
		ImageBaseURL:     c.imageBase,
		PresignTTL:       c.presignTTL,
		MaxStoreWaits:    c.storeWaits,
		MaxWaitsPerOwner: c.waitsPerUserConfig(),
	})
	if err != nil {
		return err
	}
	demoNote, err := createDemoUsers(ctx, stack.Service(), c)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	stack.Register(mux) // the API, /healthz and /readyz: load balancers probe the serving port too
	var con *console.Console
	if c.console {
		if con, err = mountConsole(ctx, mux, stack, rt.service.Store, rt.consoleReads, publicURL, c.operators, log); err != nil {
			return err
		}
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second, // above the longest Prefer: wait (60 s)
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}

	srv.RegisterOnShutdown(stack.Drain) // open Prefer: wait requests answer at once
	if con != nil {
		srv.RegisterOnShutdown(con.Drain) // and so do task pages' long-polls
	}

	admin, stopAdmin, err := obs.startAdmin(ctx, c.opsConfig, log)
	if err != nil {
		return err
	}
	defer stopAdmin()
	fmt.Fprint(stdout, demoNote) // a new key is shown once nothing can fail before serving
	if c.workers == 0 && c.storeFlags.name() == "memory" {
		// The API alone on a store no other process reaches: a task is
		// charged and stays pending until it expires.
		log.Warn("-workers 0 on the memory store: no process can run the tasks submitted here (they are charged and stay pending); use -workers 1 or more, or a shared store with worker processes")
	}
	log.Info("imagegen serving", "addr", ln.Addr().String(), "api", publicURL+"/api/v1", "console", consoleURL(c.console, publicURL), "workers", c.workers, "model", c.model, "store", c.storeFlags.name(), "blobs", blobsName(c.blobsURL), "admin", admin)
	_ = logs.Flush() // the address, at once

	// The server's timeouts set four deadlines a request: kept as plain
	// values and applied by one sweeper once they pass (within 250ms of
	// their time), they cost no clock read and timer change each.
	// stack.Run runs the workers, and callbacks of finished tasks from
	// this or any process; it returns once running generations finished
	// or were released.
	err = serveUntil(ctx, srv, coarsedeadline.Listen(limitConns(ln, c.maxConns, c.maxConnsPerAddr, c.trustedProxies, log), coarsedeadline.Config{}), stack.Run, log)
	log.Info("stopped")
	return err
}

// mountConsole serves the web console at /console/: sign-in with an API
// key, sessions kept in the store (so every process on a shared store
// knows them), the API's rate and failed-login limits, and the read
// budget per user (reads, the backend's).
func mountConsole(ctx context.Context, mux *http.ServeMux, stack *server.Server, store console.Store, reads imagegen.Limiter, publicURL string, operators []string, log *slog.Logger) (*console.Console, error) {
	u, err := url.Parse(publicURL)
	if err != nil {
		return nil, err
	}
	con, err := console.New(ctx, console.Config{
		Service:       stack.Service(),
		Store:         store,
		API:           stack.API(),
		ImageOrigins:  []string{u.Scheme + "://" + u.Host}, // image URLs start with the public URL
		Limiter:       stack.Limiter(),
		AuthFailures:  stack.AuthFailures(),
		SessionReads:  reads,
		Prefix:        "/console",
		KeySignIn:     true,
		Operators:     operators,
		SecureCookies: u.Scheme == "https", // served over https through a proxy
		Logger:        log,
	})
	if err != nil {
		return nil, err
	}
	mux.Handle("/console/", con)
	return con, nil
}

// createDemoUsers gives each -demo-key its own user with -demo-credits,
// or, with no -demo-key on the memory store, makes one demo user; it
// returns the note that shows that user's new key, once, for serve to
// print when it serves. On a shared store it makes none without
// -demo-key: every start of every process would add a key of its own to
// the store, none ever revoked, each printed where the deployment's logs
// keep it (its users' keys come from imagegen keys create).
func createDemoUsers(ctx context.Context, svc *imagegen.Service, c serveConfig) (note string, err error) {
	grant := func(owner string) error {
		if c.demoCredits == 0 {
			return nil
		}
		_, err := svc.Grant(ctx, owner, c.demoCredits, "demo-credits") // once per user, across restarts on a shared store
		return err
	}
	if len(c.demoKeys) == 0 {
		if c.storeFlags.name() != "memory" {
			return "", nil
		}
		key, _, err := svc.CreateKey(ctx, "demo")
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("demo user %q has %d credits; API key (shown once):\n%s\n", "demo", c.demoCredits, key), grant("demo")
	}
	for i, key := range c.demoKeys {
		owner := fmt.Sprintf("demo-%d", i+1)
		if _, err := svc.ImportKey(ctx, owner, key); err != nil && !errors.Is(err, imagegen.ErrKeyExists) {
			return "", fmt.Errorf("-demo-key #%d: %w", i+1, err)
		}
		if err := grant(owner); err != nil {
			return "", err
		}
	}
	return "", nil
}

// displayAddr turns a listen address into one a client can use
// (0.0.0.0 and :: become 127.0.0.1 / [::1]).
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	return net.JoinHostPort(host, port)
}

// blobsName says where image bytes are, without the URL's parameters.
func blobsName(blobsURL string) string {
	scheme, _, ok := strings.Cut(blobsURL, ":")
	if !ok {
		return "default"
	}
	return scheme
}

func consoleURL(on bool, publicURL string) string {
	if !on {
		return "off"
	}
	return publicURL + "/console/"
}

// waitsPerUserConfig is -max-waits-per-user as
// httpapi.Config.MaxWaitsPerOwner takes it: 0 (no cap) is negative there.
func (c serveConfig) waitsPerUserConfig() int {
	if c.waitsPerUser == 0 {
		return -1
	}
	return c.waitsPerUser
}
