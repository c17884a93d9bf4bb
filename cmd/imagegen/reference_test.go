package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/imagegen/imagegen/model/comfyui"
	"github.com/imagegen/imagegen/model/placeholder"
)

var update = flag.Bool("update", false, "rewrite docs/configuration.md from the flag sets")

// referencePath is the configuration reference, from this package.
var referencePath = filepath.Join("..", "..", "docs", "configuration.md")

// TestConfigurationReference keeps docs/configuration.md equal to what
// the commands' own flag sets say: every flag of every command, its
// IMAGEGEN_* variable, default and help, and the variables read from the
// environment only. After changing a flag, rewrite it with
//
//	go test ./cmd/imagegen -run TestConfigurationReference -update
func TestConfigurationReference(t *testing.T) {
	var b bytes.Buffer
	writeReference(&b, referenceCommands())
	if *update {
		if err := os.WriteFile(referencePath, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	have, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(have, b.Bytes()) {
		t.Errorf("docs/configuration.md is not what the flag sets say; run go test ./cmd/imagegen -run TestConfigurationReference -update")
	}
}

// The reference covers every command and subcommand, with the flag set
// each really parses: its -h lists exactly the reference's flags.
func TestConfigurationReferenceCoversEveryCommand(t *testing.T) {
	var want []string
	for name := range commands() {
		if subs := subcommands(name); subs != nil {
			for _, sub := range subs {
				want = append(want, name+" "+sub)
			}
		} else {
			want = append(want, name)
		}
	}
	var have []string
	for _, c := range referenceCommands() {
		have = append(have, c.name)
		t.Run(c.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if err := run(ctx, append(strings.Fields(c.name), "-h"), noEnv, io.Discard, &stderr); err != nil {
				t.Fatal(err)
			}
			var listed, documented []string
			for line := range strings.Lines(stderr.String()) {
				if rest, ok := strings.CutPrefix(line, "  -"); ok {
					listed = append(listed, strings.Fields(rest)[0])
				}
			}
			c.flags.VisitAll(func(f *flag.Flag) { documented = append(documented, f.Name) })
			if !slices.Equal(listed, documented) {
				t.Errorf("-h lists %v, the reference %v", listed, documented)
			}
		})
	}
	slices.Sort(want)
	slices.Sort(have)
	if !slices.Equal(want, have) {
		t.Errorf("the reference documents %v; the commands are %v", have, want)
	}
}

// referenceCommand is one command's flags as the reference shows them.
type referenceCommand struct {
	name  string // "serve", "keys create"
	about string
	env   bool // its flags also read IMAGEGEN_<NAME>
	flags *flag.FlagSet
}

// referenceCommands builds every command's flag set the way the command
// does.
func referenceCommands() []referenceCommand {
	out := io.Discard
	cmds := []referenceCommand{
		{name: "serve", about: "the HTTP API, the console and workers", env: true, flags: serveFlags(&serveConfig{}, out)},
		{name: "worker", about: "workers only, on a shared store", env: true, flags: workerFlags(&runtimeConfig{}, out)},
		{name: "migrate", about: "create or update the PostgreSQL schema", env: true, flags: migrateFlags(&migrateConfig{}, out)},
	}
	var id, ref string
	var amount int64
	for _, sub := range subcommands("keys") {
		cmds = append(cmds, referenceCommand{name: "keys " + sub, env: true, flags: adminFlagSet("keys "+sub, &adminFlags{}, out, keysFlags(sub, &id))})
	}
	for _, sub := range subcommands("credits") {
		cmds = append(cmds, referenceCommand{name: "credits " + sub, env: true, flags: adminFlagSet("credits "+sub, &adminFlags{}, out, creditsFlags(sub, &amount, &ref))})
	}
	var weight int
	for _, sub := range subcommands("owners") {
		cmds = append(cmds, referenceCommand{name: "owners " + sub, env: true, flags: adminFlagSet("owners "+sub, &adminFlags{}, out, ownersFlags(sub, &weight))})
	}
	for _, sub := range subcommands("inspect") {
		cmds = append(cmds, referenceCommand{name: "inspect " + sub, env: true, flags: inspectFlagSet(sub, &inspectFlags{}, out)})
	}
	cmds = append(cmds,
		referenceCommand{name: "generate", about: "generate images through a server's API", flags: generateFlags(&generateConfig{}, out)},
		referenceCommand{name: "tasks get", about: "print a task of a server's API", flags: tasksGetFlags(&apiFlags{}, out)},
	)
	return cmds
}

// writeReference writes the reference in Markdown: a table per command,
// then the variables read from the environment only.
func writeReference(w io.Writer, cmds []referenceCommand) {
	fmt.Fprint(w, `# Configuration reference

<!-- Generated from the commands' flag sets by TestConfigurationReference
     (cmd/imagegen/reference_test.go); do not edit. After changing a flag:
     go test ./cmd/imagegen -run TestConfigurationReference -update -->

Every flag of every `+"`imagegen`"+` command, with its default. The commands that
run or manage a store (`+"`serve`, `worker`, `migrate`, `keys`, `credits`, `owners`, `inspect`"+`)
also read each flag from the environment variable shown beside it: the flag's
name upper-cased, dashes as underscores, after `+"`IMAGEGEN_`"+`. A flag on the
command line wins over the environment; a repeatable flag takes a
comma-separated list there. An empty variable counts as not set: to give a
flag an empty value (`+"`-openai-prefix=`"+`, which turns the OpenAI-compatible
endpoint off), give the flag itself. Secrets (passwords in URLs, keys) are best given
through the environment or a `+"`-<name>-file`"+` flag, since a command line shows in
`+"`ps`"+`; a secret given on the command line, as itself or as a file, wins over
both of its variables, and one given both ways in one place is refused. `+"`generate`"+` and `+"`tasks`"+` are clients of a server's API: they read the
server from `+"`-server`"+` or `+"`IMAGEGEN_SERVER`"+`, and the API key from
`+"`IMAGEGEN_API_KEY`"+` only.

`)
	for i, c := range cmds {
		if i > 0 {
			fmt.Fprint(w, " · ")
		}
		fmt.Fprintf(w, "[%s](#imagegen-%s)", c.name, strings.ReplaceAll(c.name, " ", "-"))
	}
	fmt.Fprintln(w)
	for _, c := range cmds {
		fmt.Fprintf(w, "\n## imagegen %s\n\n", c.name)
		if c.about != "" {
			fmt.Fprintf(w, "%s.\n\n", strings.ToUpper(c.about[:1])+c.about[1:])
		}
		fmt.Fprintln(w, "| flag | environment | default | meaning |")
		fmt.Fprintln(w, "|---|---|---|---|")
		c.flags.VisitAll(func(f *flag.Flag) {
			kind, usage := flag.UnquoteUsage(f)
			if kind == "value" && strings.HasSuffix(f.Name, "-file") {
				kind = "path"
			}
			name := "`-" + f.Name
			if kind != "" {
				name += " " + kind
			}
			name += "`"
			env := ""
			switch {
			case c.env:
				env = "`" + envName(f.Name) + "`"
			case f.Name == "server":
				env = "`" + envServer + "`"
			}
			def := ""
			if !zeroDefault(f) {
				def = "`" + f.DefValue + "`"
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", name, env, def, cell(usage))
		})
	}
	fmt.Fprint(w, "\n## Environment only\n\nRead from the environment and never from a flag, so that no process listing shows them.\n\n")
	fmt.Fprintln(w, "| variable | read by | meaning |")
	fmt.Fprintln(w, "|---|---|---|")
	fmt.Fprintf(w, "| `%s` | generate, tasks | the API key the client commands send |\n", envAPIKey)
	for _, p := range providerNames() {
		if p == placeholder.Name {
			continue
		}
		need := "required"
		if selfHosted(p) {
			need = "optional (a self-hosted server)"
		}
		fmt.Fprintf(w, "| `%s` | serve, worker with `-model %s` | the provider's API key; %s |\n", apiKeyVar(p), p, need)
		base := "another API root for the adapter (a proxy, or a fake in tests)"
		if selfHosted(p) {
			base = "the server's address (required)"
		}
		fmt.Fprintf(w, "| `%s` | serve, worker with `-model %s` | %s |\n", baseURLVar(p), p, base)
	}
	fmt.Fprintf(w, "| `%s` | serve, worker with `-model %s/NAME` | a folder of operators' workflows: NAME.json (text-to-image) and NAME.img2img.json (image-to-image); a NAME found there is that workflow, any other NAME the checkpoint of the built-in workflows |\n", comfyWorkflowsVar, comfyui.Provider)
	fmt.Fprintln(w, "| `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_PROFILE`, `AWS_REGION`, … | serve, worker with `-blobs s3://…` | the standard AWS chain, for the bucket |")
}

// zeroDefault reports a flag whose default is its type's zero value and
// says nothing: an empty string or list.
func zeroDefault(f *flag.Flag) bool {
	if f.DefValue == "" {
		return true
	}
	t := reflect.TypeOf(f.Value)
	if t.Kind() != reflect.Pointer {
		return false
	}
	switch f.Value.(type) {
	case *stringList, *prefixList:
		return f.DefValue == reflect.New(t.Elem()).Interface().(flag.Value).String()
	}
	return false
}

// cell makes text safe in a Markdown table cell.
func cell(text string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ", "<", "&lt;").Replace(text)
}
