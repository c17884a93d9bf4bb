package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/httpapi"
	"github.com/imagegen/imagegen/internal/drain"
	"github.com/imagegen/imagegen/internal/waitslots"
	"github.com/imagegen/imagegen/internal/weburl"
	"github.com/imagegen/imagegen/ratelimit"
)

// SessionSecretName is the name under which the default signing key of
// sessions and CSRF tokens is kept in the store (imagegen.SecretStore).
const SessionSecretName = "console-session"

// DefaultSessionTTL is how long a key sign-in lasts when
// Config.SessionTTL is zero.
const DefaultSessionTTL = 12 * time.Hour

// IdentifyFunc names the signed-in user of a request and says whether the
// user is an operator. It returns "" (and a nil error) when nobody is
// signed in; an error wrapping imagegen.ErrUnauthorized means the same.
// Any other error is a server error.
type IdentifyFunc func(r *http.Request) (user string, operator bool, err error)

// Store is what the console keeps in the service's store: sessions and
// the default session secret. An imagegen.Store is one.
type Store interface {
	imagegen.SessionStore
	imagegen.SecretStore
}

// Config configures the console. Service and Store are required, and
// one way of signing in: Identify, KeySignIn, or both.
type Config struct {
	Service *imagegen.Service
	// Store keeps the sessions and the default session secret: the
	// service's store, so that every process on it shares them.
	Store Store

	// API gives the signed URLs of a task's images (its ImageURLs). Or
	// set ImageURLs; one of the two is required.
	API       *httpapi.Handler
	ImageURLs func(*imagegen.Task) []string
	// ImageOrigins are origins (scheme://host[:port]) other than the
	// console's own from which image URLs are loaded; they are added to
	// the Content-Security-Policy's img-src. Set it when the API's
	// PublicURL is not the origin the console is served from.
	ImageOrigins []string

	// Limiter is the API's per-key rate limit; playground submissions
	// count against it. Nil: the playground is not rate limited.
	Limiter imagegen.Limiter

	// AuthFailures counts failed key sign-ins per client address, like
	// the API's failed authentications (share the same limiter); beyond
	// its budget the sign-in form answers 429. Nil: not limited.
	AuthFailures imagegen.Limiter
	// ClientIP names the client of a request for AuthFailures. Default:
	// API.ClientIP when API is set, else httpapi.PeerClientIP (the
	// request's remote address, an IPv6 one by its /64, as the API
	// counts it without trusted proxies).
	ClientIP func(*http.Request) string

	// Prefix is where the app mounts the console, e.g. "/console"
	// (default ""). Links, redirects and cookie paths start with it, so
	// it must be a clean absolute path on this site: New refuses one
	// that starts with "//", or holds a backslash, a dot segment or a
	// character that ends a path.
	Prefix string

	// Identify is the host app's login.
	Identify IdentifyFunc
	// KeySignIn lets a user sign in with one of their API keys (the
	// standalone server). Operators names the owners that are operators
	// when signed in this way.
	KeySignIn bool
	Operators []string
	// SessionTTL is how long a key sign-in lasts (default 12h).
	SessionTTL time.Duration

	// SessionReads counts each signed-in user's page reads (GET
	// requests: pages, and the task page's long-polls), every session of
	// the user together (a new sign-in opens no fresh budget); beyond
	// its budget a read answers 429 with Retry-After. Default: an
	// in-process limiter of DefaultSessionReads a minute; processes that
	// share a store should share one on it (ratelimit/redis,
	// ratelimit/postgres), as `imagegen serve` does.
	SessionReads imagegen.Limiter
	// MaxSessionWaits bounds the long waits (/api/tasks/{id}?wait=) one
	// user's sessions hold open at once in this process (default
	// DefaultMaxSessionWaits); beyond it a wait answers 429 with
	// Retry-After at once.
	MaxSessionWaits int

	// Secret signs sessions and CSRF tokens (at least 16 bytes). Default:
	// a random key kept in the store under SessionSecretName.
	Secret []byte
	// SecureCookies marks cookies Secure even on plain-http requests (a
	// TLS-terminating proxy in front). Requests over TLS always get it.
	// Secure cookies are named with the __Host- prefix, Path=/ (see the
	// package doc, Security).
	SecureCookies bool

	Clock  imagegen.Clock // default imagegen.SystemClock
	Logger *slog.Logger   // default slog.Default()
}

// Console is the console's http.Handler.
type Console struct {
	cfg       Config
	svc       *imagegen.Service
	store     Store // Config.Store: sessions
	imageURLs func(*imagegen.Task) []string
	pages     map[string]*template.Template
	mux       *http.ServeMux
	csp       string
	log       *slog.Logger
	waits     *waitslots.Slots // long waits held, per user
	// drained cuts task pages' long-polls short once Drain is called:
	// they then answer at once.
	drained *drain.Waits
}

// New returns the console for cfg, or an error naming the missing or bad
// field. ctx bounds the store call that fetches the default secret.
func New(ctx context.Context, cfg Config) (*Console, error) {
	switch {
	case cfg.Service == nil:
		return nil, errors.New("console: Config.Service is required")
	case cfg.Store == nil:
		return nil, errors.New("console: Config.Store is required (the service's store: sessions and the session secret)")
	case cfg.API == nil && cfg.ImageURLs == nil:
		return nil, errors.New("console: Config.API or Config.ImageURLs is required (signed image URLs)")
	case cfg.Identify == nil && !cfg.KeySignIn:
		return nil, errors.New("console: set Config.Identify (the app's login) or Config.KeySignIn")
	case cfg.SessionTTL < 0:
		return nil, errors.New("console: Config.SessionTTL must not be negative")
	case cfg.MaxSessionWaits < 0:
		return nil, errors.New("console: Config.MaxSessionWaits must not be negative")
	case cfg.Prefix != "/" && cfg.Prefix != "" && !weburl.PathPrefix(strings.TrimSuffix(cfg.Prefix, "/")):
		return nil, fmt.Errorf("console: Config.Prefix must be a path such as /console (got %q)", cfg.Prefix)
	}
	for _, o := range cfg.ImageOrigins {
		if !validOrigin(o) {
			return nil, fmt.Errorf("console: Config.ImageOrigins: %q is not an origin such as https://img.example.com", o)
		}
	}
	cfg.Prefix = strings.TrimSuffix(cfg.Prefix, "/")
	cfg.SessionTTL = cmp.Or(cfg.SessionTTL, DefaultSessionTTL)
	cfg.MaxSessionWaits = cmp.Or(cfg.MaxSessionWaits, DefaultMaxSessionWaits)
	if cfg.Clock == nil {
		cfg.Clock = imagegen.SystemClock{}
	}
	if cfg.SessionReads == nil {
		reads, err := ratelimit.NewMemory(ratelimit.MemoryConfig{Limit: DefaultSessionReads, Window: time.Minute, Clock: cfg.Clock})
		if err != nil {
			return nil, fmt.Errorf("console: session read budget: %w", err)
		}
		cfg.SessionReads = reads
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if len(cfg.Secret) == 0 {
		secret, err := cfg.Store.SharedSecret(ctx, SessionSecretName, imagegen.NewSecretKey)
		if err != nil {
			return nil, fmt.Errorf("console: session secret from the store: %w", err)
		}
		cfg.Secret = secret
	}
	if len(cfg.Secret) < 16 {
		return nil, errors.New("console: Config.Secret must be at least 16 bytes")
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{
		cfg:       cfg,
		svc:       cfg.Service,
		store:     cfg.Store,
		imageURLs: cfg.ImageURLs,
		pages:     pages,
		csp:       contentSecurityPolicy(cfg.ImageOrigins),
		log:       cfg.Logger,
		waits:     waitslots.New(cfg.MaxSessionWaits),
		drained:   drain.New(),
	}
	if c.imageURLs == nil {
		c.imageURLs = cfg.API.ImageURLs
	}
	switch {
	case c.cfg.ClientIP != nil:
	case cfg.API != nil:
		c.cfg.ClientIP = cfg.API.ClientIP
	default:
		c.cfg.ClientIP = httpapi.PeerClientIP
	}
	c.mux = c.routes()
	return c, nil
}

// ServeHTTP serves one console request, with the security headers.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header(), c.csp)
	c.mux.ServeHTTP(w, r)
}

// routes registers every page under the prefix. Account pages go through
// c.user (signed-in users), operator pages through c.operator (404 for
// everybody else, signed in or not, before anything else is checked),
// and every POST through the CSRF check. Anything else is 404.
func (c *Console) routes() *http.ServeMux {
	p := c.cfg.Prefix
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+p+"/static/{file}", c.static(staticFiles()))
	mux.HandleFunc("GET "+p+"/{$}", c.home)
	if c.cfg.KeySignIn {
		mux.HandleFunc("GET "+p+"/signin", c.signInPage)
		mux.HandleFunc("POST "+p+"/signin", c.csrf(c.signIn))
	}
	mux.HandleFunc("POST "+p+"/signout", c.csrf(c.signOut))
	if c.cfg.KeySignIn {
		mux.HandleFunc("POST "+p+"/signout/everywhere", c.csrf(c.user(c.signOutEverywhere)))
	}

	mux.HandleFunc("GET "+p+"/playground", c.user(c.playgroundPage))
	mux.HandleFunc("POST "+p+"/playground", c.csrf(c.user(c.playgroundSubmit)))
	mux.HandleFunc("GET "+p+"/tasks", c.user(c.tasksPage))
	mux.HandleFunc("GET "+p+"/tasks/{id}", c.user(c.taskPage))
	mux.HandleFunc("POST "+p+"/tasks/{id}/cancel", c.csrf(c.user(c.cancelTask)))
	mux.HandleFunc("GET "+p+"/api/tasks/{id}", c.user(c.taskJSON))
	mux.HandleFunc("GET "+p+"/keys", c.user(c.keysPage))
	mux.HandleFunc("POST "+p+"/keys", c.csrf(c.user(c.createKey)))
	mux.HandleFunc("POST "+p+"/keys/{id}/revoke", c.csrf(c.user(c.revokeKey)))
	mux.HandleFunc("GET "+p+"/credits", c.user(c.creditsPage))
	mux.HandleFunc("GET "+p+"/ops", c.operator(c.opsPage))
	mux.HandleFunc("POST "+p+"/ops/tasks/{id}/cancel", c.operator(c.csrf(c.opsCancel)))
	mux.HandleFunc("POST "+p+"/ops/tasks/{id}/retry", c.operator(c.csrf(c.opsRetry)))
	mux.HandleFunc("POST "+p+"/ops/sessions/end", c.operator(c.csrf(c.opsEndSessions)))
	mux.HandleFunc(p+"/", c.notFound)
	return mux
}

// path returns the console URL of a page ("/tasks" -> "/console/tasks").
func (c *Console) path(page string) string { return c.cfg.Prefix + page }

func (c *Console) isOperatorOwner(owner string) bool {
	return slices.Contains(c.cfg.Operators, owner)
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
