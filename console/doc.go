// Package console is imagegen's web console: account pages where a user
// creates, names and revokes API keys, sees the credit balance and the
// ledger, lists tasks (with thumbnails, errors and a cancel button), and
// tries prompts in a playground that submits through the same Service,
// price and rate limit as the HTTP API. It is one http.Handler that a host
// app mounts on its own mux under any prefix:
//
//	con, err := console.New(ctx, console.Config{
//		Service:  srv.Service(),
//		Store:    store,              // the service's: sessions, the session secret
//		API:      srv.API(),          // signed image URLs
//		Limiter:  srv.Limiter(),      // the API's per-key rate limit
//		Prefix:   "/console",
//		Identify: func(r *http.Request) (string, bool, error) { ... }, // the app's login
//	})
//	mux.Handle("/console/", con)
//
// # Who is signed in
//
// A host app with its own login sets Config.Identify: it names the user
// of a request (and whether that user is an operator), or answers "" for
// nobody. The standalone server (`imagegen serve`) sets KeySignIn
// instead: a user signs in with one of their API keys. The session is
// kept in Config.Store, the service's store (imagegen.SessionStore: the owner, the
// key's id and an expiry, Config.SessionTTL), under the SHA-256 hash of
// a random token that the cookie carries with its HMAC (SHA-256, by
// Config.Secret: by default the store's shared secret "console-session",
// so every process on a shared store accepts it, and a forged cookie is
// refused without a store read). Signing out ends the session in the
// store, so a copy of the cookie opens nothing afterwards, in any
// process, and so does signing in again: a sign-in ends the session the
// browser's cookie named (whoever's it was) before it opens a new one;
// "Sign out everywhere" (POST /signout/everywhere, on the keys
// page) ends every session of the user, and an operator may end them
// all for a user from the operator page (with a reason, logged). Each
// request also checks that the key is still live, so revoking a key
// ends its sessions at once.
// Owners listed in Config.Operators are operators.
//
// # Security
//
// Pages are rendered with html/template (every prompt, key name and error
// is escaped; no user data is ever marked safe). Every response carries a
// strict Content-Security-Policy (default-src 'self'; no inline script or
// style; frame-ancestors 'none'), X-Content-Type-Options: nosniff,
// Referrer-Policy: same-origin and Cache-Control: no-store. Every
// state-changing form carries a CSRF token: the HMAC of a random cookie
// (HttpOnly, SameSite=Lax) and the signed-in user, checked on each POST
// (double-submit, bound to the user). Cookies are HttpOnly, SameSite=Lax,
// and Secure when the request came over TLS (or Config.SecureCookies is
// set, behind a TLS-terminating proxy). Secure cookies are named with the
// __Host- prefix (__Host-imagegen_console_session,
// __Host-imagegen_console_csrf), which browsers accept only with Secure,
// Path=/ and no Domain, so that no sibling domain and no plain-http page
// can set a cookie the console would read; only the prefixed names are
// read then. Path=/ sends them to the whole host, so mount one console a
// host name there. Over plain http (the default on loopback) the prefix
// cannot be used (browsers refuse a __Host- cookie without Secure): the
// cookies keep their plain names, scoped to Config.Prefix. Moving a
// deployment to https signs its users out once. A user only ever sees their own
// tasks, keys and ledger: another user's task answers 404, as does every
// operator page for a user who is not an operator.
//
// # Pages
//
//	/              sign-in (or a redirect to the playground when signed in)
//	/playground    scene, prompt, aspect ratio, reference image URLs
//	/tasks         recent tasks, newest first, paged
//	/tasks/{id}    one task: id, model, seed, price, when it was
//	               submitted, started and finished, how long it waited
//	               and ran, and where it is (its place in the queue, its
//	               attempt); pending -> processing -> result live
//	/keys          API keys: create (shown once), name, revoke; each
//	               key's creation and last use (to the minute,
//	               imagegen.KeyUseGranularity; "never" when unused)
//	/credits       balance and ledger, newest first, paged
//	/ops           operators only: queue depth and the oldest pending
//	               task's wait, the last hour as SVG charts drawn by the
//	               server (tasks finished per minute by how, generation
//	               time p50/p95, queue depth: worked out from the tasks
//	               in the store, see history.go), the last hour's tasks by status and
//	               failures by code (imagegen.Inspector), the last
//	               hour's provider calls by outcome and fallbacks
//	               (Inspector.ProviderStats: every worker's counts,
//	               from the store); a user's balance, tasks and keys;
//	               retry (free or charged again) and cancel (refunded)
//	               with a reason, logged
//
// All assets (templates, one style sheet, one script) are embedded; no
// CDN, no fonts, no build step. Everything works without JavaScript but
// the live update of a running task (a long-poll of the JSON endpoint
// /api/tasks/{id}, which waits with Service.WaitTask) and the copy button
// of a new key.
//
// The playground's submissions, the creation of an API key and a key
// sign-in (a session kept in the store for Config.SessionTTL) count
// against Config.Limiter under the same key the API uses for the caller:
// "key:"+id for a key session and the key signing in, "owner:"+user for
// a user named by Identify. The creation of a key counts against
// "owner:"+user too, a budget all the user's keys share: each new key
// brings a budget of its own, so counted only against the key that made
// it, signing in with each new key would make keys without bound. Beyond
// the budget the page answers 429 with Retry-After
// (rounded up, as the API does). Revoking a key does not count, so that a
// user who has spent the budget can still revoke a leaked key; the
// long-poll of a task page does not count either: it reads one task the
// user already paid for.
//
// # Abuse bounds
//
// Browsing is exempt from the API's rate limit, but every signed-in
// user has bounds, shared by all of their sessions (key sign-ins in
// several browsers, or the host app's session through Identify), so
// that signing in again with the key opens no fresh allowance:
//
//   - reads: every GET of a signed-in page or of the JSON endpoint
//     counts against Config.SessionReads (default DefaultSessionReads,
//     120 a minute, in this process; share a store-backed limiter
//     between processes). Beyond it: 429 with Retry-After, JSON on the
//     JSON endpoint. Forms do not count, so signing out or revoking a key
//     always works.
//   - long waits: one user holds at most Config.MaxSessionWaits
//     (default DefaultMaxSessionWaits, 10) long-polls of
//     /api/tasks/{id}?wait= open at once in one process; one more
//     answers 429 at once (JSON, Retry-After: 2), and the task page's
//     script comes back then. Console.Drain (register it with
//     http.Server.RegisterOnShutdown) answers every open one at once
//     with the task as it stands, so task pages do not hold up a
//     shutdown.
//
// A path that does not exist, the static directory itself (no
// listing), and the operator pages for anybody who is not an operator,
// signed in or not, all answer the same 404.
//
// Each rendering of the playground form carries a token of its own (the
// hidden field "once"), kept for a day in the store's idempotency records
// under the user: the same form sent twice (a double click, a reload
// that posts again) makes one task and one charge, the second answer
// showing the first one's task; sent again with other values it makes
// nothing and offers a fresh form. A form refused before it made a task
// (invalid, rate-limited, short of credits) keeps no record of its token
// and may be sent again.
package console
