package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// What a server sends (a task id, its status, its error, an error
// answer's message) reaches the user's terminal through generate and
// tasks: a server, or a proxy before it, that put an escape sequence in
// one would rewrite the terminal (retitle it, clear it, forge lines).
// Control characters are printed escaped, as table cells are.
func TestGeneratePrintsNoControlCharacterOfTheServer(t *testing.T) {
	const evil = "\x1b]0;owned\x07\x1b[2J\rforged line"
	failed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusAccepted)
			_, _ = w.Write([]byte(`{"task_id":"t\u001b[2J1","status":"pending\u001b]0;x\u0007","credits_used":1,"credits_remaining":9}`))
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]string{"task_id": "t1", "status": "failed", "error": evil, "model": "m\x1b[31m"})
	}))
	defer failed.Close()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusForbidden) // not retried
		_, _ = w.Write([]byte(evil))
	}))
	defer proxy.Close()

	for name, r := range map[string]cliRun{
		"a failed task":     runCLI(ctx, failed.URL, nil, "generate", "-prompt", "a fox"),
		"a proxy's 403":     runCLI(ctx, proxy.URL, nil, "generate", "-prompt", "a fox"),
		"tasks get via 403": runCLI(ctx, proxy.URL, nil, "tasks", "get", "t1"),
	} {
		if r.err == nil {
			t.Errorf("%s: no error", name)
		}
		for what, s := range map[string]string{"stdout": r.stdout, "stderr": r.stderr, "error": errString(r.err)} {
			if strings.ContainsAny(s, "\x1b\x07\r") {
				t.Errorf("%s: the %s holds the server's control characters: %q", name, what, s)
			}
		}
	}
}

// tasks get prints the task as JSON, whose encoder escapes C0 control
// characters but leaves C1 ones (U+0080 to U+009F) raw: U+009B starts an
// escape sequence on some terminals. They are printed as \u escapes,
// and the JSON still reads back as the server sent it.
func TestTasksGetPrintsNoC1ControlCharacter(t *testing.T) {
	const evil = "\u009b2J\u009d0;owned\u009c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"task_id": "t1", "status": "failed", "error": evil})
	}))
	defer srv.Close()
	r := runCLI(ctx, srv.URL, nil, "tasks", "get", "t1")
	if r.err != nil {
		t.Fatal(r.err)
	}
	if strings.ContainsAny(r.stdout, "\u009b\u009c\u009d") {
		t.Errorf("stdout holds the server's C1 control characters: %q", r.stdout)
	}
	var back struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &back); err != nil || back.Error != evil {
		t.Errorf("stdout reads back as error %q (%v), want %q", back.Error, err, evil)
	}
}
