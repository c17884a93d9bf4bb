package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// What the binary prints for `imagegen serve -port 8080`: at most six
// lines, naming -addr and -h, and no usage dump.
func TestUnknownFlagIsShortAndNamesTheNearest(t *testing.T) {
	is := is.New(t)
	cmd := exec.Command(imagegenBinary(t), "serve", "-port", "8080")
	out, err := cmd.CombinedOutput()
	is.True(err != nil) // exit status 1
	text := strings.TrimRight(string(out), "\n")
	is.True(len(strings.Split(text, "\n")) <= 6)
	is.True(strings.Contains(text, "-addr"))
	is.True(strings.Contains(text, `"imagegen serve -h"`))
	is.True(!strings.Contains(text, "-public-url")) // not the usage
}

// Each command's unknown-flag error names the flag meant, from a typo,
// a synonym or another spelling, and never prints the usage.
func TestUnknownFlagSuggestions(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "-port", "8080"}, "(did you mean -addr?)"},
		{[]string{"serve", "-listen=:8080"}, "(did you mean -addr?)"},
		{[]string{"serve", "-rate_limit", "5"}, "(did you mean -rate-limit?)"},
		{[]string{"serve", "-rate", "5"}, "(did you mean -rate-limit?)"},
		{[]string{"serve", "-worker", "5"}, "(did you mean -workers?)"},
		{[]string{"serve", "-concurrency", "5"}, "(did you mean -workers?)"},
		{[]string{"worker", "-redis-url", "x"}, "(did you mean -redis?)"},
		{[]string{"worker", "-database-url", "x"}, "(did you mean -postgres?)"},
		{[]string{"inspect", "list", "-ownr", "u"}, "(did you mean -owner?)"},
		{[]string{"keys", "create", "-user", "u"}, "(did you mean -owner?)"},
		{[]string{"generate", "-aspect-ratio", "16:9"}, "(did you mean -aspect?)"},
		{[]string{"generate", "-api-key", "k"}, "read from IMAGEGEN_API_KEY only"},
		{[]string{"tasks", "get", "-sever", "x", "id"}, "(did you mean -server?)"},
		{[]string{"migrate", "-shema", "s"}, "(did you mean -schema?)"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			is := is.New(t)
			var stdout, stderr bytes.Buffer
			err := run(ctx, tt.args, noEnv, &stdout, &stderr)
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want))
			is.True(strings.Contains(err.Error(), "-h\" to list every flag"))
			is.Equal(stderr.String(), "") // no usage
		})
	}
	t.Run("nothing near", func(t *testing.T) {
		is := is.New(t)
		err := run(ctx, []string{"serve", "-frobnicate"}, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
		is.True(err != nil)
		is.True(!strings.Contains(err.Error(), "did you mean"))
	})
}

// -h still prints every flag, and is no error.
func TestHelpStillPrintsEveryFlag(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	is.NoErr(run(ctx, []string{"serve", "-h"}, noEnv, &bytes.Buffer{}, &stderr))
	is.True(strings.Contains(stderr.String(), "-public-url"))
	is.True(strings.Contains(stderr.String(), "-addr string"))
}

// A value of the wrong type, on the command line or in the environment,
// is shown with the type wanted.
func TestBadValuesSayWhatIsWanted(t *testing.T) {
	wantErrors(t, []errorCase{
		{[]string{"serve", "-workers", "ten"}, nil, `-workers "ten": want a whole number`},
		{[]string{"serve", "-lease", "5"}, nil, `-lease "5": want a duration such as 90s`},
		{[]string{"serve", "-pprof=maybe"}, nil, `-pprof "maybe": want true or false`},
		{[]string{"serve"}, map[string]string{"IMAGEGEN_RATE_LIMIT": "ten"}, `IMAGEGEN_RATE_LIMIT="ten": want a whole number (it sets -rate-limit)`},
		{[]string{"worker"}, map[string]string{"IMAGEGEN_LEASE": "30"}, `IMAGEGEN_LEASE="30": want a duration such as 90s, 5m or 1h30m (it sets -lease)`},
		{[]string{"serve"}, map[string]string{"IMAGEGEN_CONSOLE": "yes please"}, `IMAGEGEN_CONSOLE="yes please": want true or false`},
		{[]string{"serve"}, map[string]string{"IMAGEGEN_TRUSTED_PROXY": "nope"}, `IMAGEGEN_TRUSTED_PROXY="nope": not a CIDR`},
	})
}

// A secret's variable is named, its value never shown.
func TestBadSecretValueIsNotShown(t *testing.T) {
	is := is.New(t)
	// -redis is a secret (it may hold a password) and a string: it cannot
	// fail to parse, so check the rule on a flag that can, made secret.
	fs := newFlagSet("test", &bytes.Buffer{})
	fs.Int("port", 0, "")
	secretFiles(fs, "port")
	err := envDefaults(fs, func(k string) string {
		if k == "IMAGEGEN_PORT" {
			return "hunter2"
		}
		return ""
	})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), "IMAGEGEN_PORT"))
	is.True(!strings.Contains(err.Error(), "hunter2"))
}

// URL slips get the URL they likely meant.
func TestURLMistakesSuggestTheFix(t *testing.T) {
	wantErrors(t, []errorCase{
		{[]string{"tasks", "get", "t1"}, map[string]string{envAPIKey: "k", envServer: "127.0.0.1:18570"}, "IMAGEGEN_SERVER: client: base URL \"127.0.0.1:18570\" has no scheme: did you mean http://127.0.0.1:18570"},
		{[]string{"tasks", "get", "-server", "localhost:8080", "t1"}, map[string]string{envAPIKey: "k"}, "-server: client: base URL \"localhost:8080\" has no scheme: did you mean http://localhost:8080"},
		{[]string{"serve", "-addr", "127.0.0.1:0", "-blobs", "/srv/images"}, nil, "write file:///srv/images"},
		{[]string{"serve", "-addr", "127.0.0.1:0", "-redis", "127.0.0.1:6379"}, nil, "(did you mean redis://127.0.0.1:6379?)"},
		{[]string{"serve", "-addr", "127.0.0.1:0", "-postgres", "127.0.0.1:5432"}, nil, "(did you mean postgres://127.0.0.1:5432?)"},
	})
}

// An unknown command names the nearest one, without the usage.
func TestUnknownCommandNamesTheNearest(t *testing.T) {
	is := is.New(t)
	var stderr bytes.Buffer
	err := run(ctx, []string{"serv"}, noEnv, &bytes.Buffer{}, &stderr)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `unknown command "serv" (did you mean serve?)`))
	is.True(strings.Contains(err.Error(), `run "imagegen help"`))
	is.Equal(stderr.String(), "")
}

// errorCase is a command line and environment, and what its error says.
type errorCase struct {
	args []string
	env  map[string]string
	want string
}

// wantErrors runs each case and checks that it fails saying want.
func wantErrors(t *testing.T, cases []errorCase) {
	for _, tt := range cases {
		t.Run(tt.want, func(t *testing.T) {
			is := is.New(t)
			getenv := func(k string) string { return tt.env[k] }
			err := run(ctx, tt.args, getenv, &bytes.Buffer{}, &bytes.Buffer{})
			is.True(err != nil)
			is.True(strings.Contains(err.Error(), tt.want))
		})
	}
}

// An unknown subcommand names the nearest one, in two lines.
func TestUnknownSubcommandNamesTheNearest(t *testing.T) {
	is := is.New(t)
	err := run(ctx, []string{"keys", "creat", "-owner", "u"}, noEnv, &bytes.Buffer{}, &bytes.Buffer{})
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `unknown keys command "creat" (did you mean create?)`))
	is.True(len(strings.Split(err.Error(), "\n")) == 2)
}
