package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/imagegen/imagegen/store/postgres"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// migrateConfig is what migrate is told.
type migrateConfig struct {
	url, listen, schema string
	down                bool
	to                  int
	// redisFrom and redisTo move a single-node Redis store onto a
	// sharded one (a Cluster).
	redisFrom, redisTo string
}

// migrateFlags is migrate's flag set, filling c.
func migrateFlags(c *migrateConfig, stderr io.Writer) *flag.FlagSet {
	fs := newFlagSet("migrate", stderr)
	fs.StringVar(&c.url, "postgres", "", "PostgreSQL URL (postgres://user@host:port/db) (required)")
	fs.StringVar(&c.listen, "postgres-listen", "", postgresListenUsage)
	fs.StringVar(&c.schema, "schema", postgres.DefaultSchema, "schema of the store's tables (created if missing)")
	fs.BoolVar(&c.down, "down", false, "undo every migration: drop the store's tables and their data (the schema stays)")
	fs.StringVar(&c.redisFrom, "redis", "", "with -redis-to: the Redis URL of a single-node store to copy onto a Cluster (its queue must be empty: stop submits and let the workers finish first)")
	fs.StringVar(&c.redisTo, "redis-to", "", "with -redis: the redis+cluster:// URL of the Cluster to copy the store onto, every owner to its shard")
	secretFiles(fs, "postgres", "postgres-listen", "redis", "redis-to")
	fs.IntVar(&c.to, "to", -1, fmt.Sprintf("migrate up or down to this version (0 to %d; default the latest)", postgres.LatestVersion()))
	return fs
}

// migrateCmd: imagegen migrate -postgres URL [-schema S] [-down | -to N]
// brings the PostgreSQL schema to this build's version (or down).
func migrateCmd(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	var c migrateConfig
	fs := migrateFlags(&c, stderr)
	if err := parseFlags(fs, args, getenv); err != nil {
		return helpIsNoError(err)
	}
	// -1, -to's default, is the latest version; any other negative -to
	// would read as the latest too, though "-to -1" typed to mean "one
	// back" does not mean up.
	if c.to < -1 {
		return fmt.Errorf("-to must be a version, 0 to %d (got %d)", postgres.LatestVersion(), c.to)
	}
	if c.redisFrom != "" || c.redisTo != "" {
		return migrateRedis(ctx, c, stdout)
	}
	url, listen, schema, down, to := c.url, c.listen, c.schema, c.down, c.to
	switch {
	case url == "":
		return errors.New("-postgres URL is required")
	case down && to >= 0:
		return errors.New("use one of -down and -to")
	case to > postgres.LatestVersion():
		return fmt.Errorf("-to: no version %d (this build knows 0 to %d)", to, postgres.LatestVersion())
	}
	target := postgres.LatestVersion()
	if down {
		target = 0
	} else if to >= 0 {
		target = to
	}
	// Migrations hold an advisory lock and change the schema: on the
	// direct connection when -postgres goes through a pooler.
	if listen != "" {
		url = listen
	}
	pool, err := dialPostgres(ctx, url, false)
	if err != nil {
		return err
	}
	defer pool.Close()
	from, err := postgres.SchemaVersion(ctx, pool, schema)
	if err != nil {
		return redactErr(err, url)
	}
	if err := postgres.MigrateTo(ctx, pool, schema, target); err != nil {
		return redactErr(err, url)
	}
	if from == target {
		fmt.Fprintf(stdout, "schema %s is at version %d; nothing to do\n", schema, target)
		return nil
	}
	fmt.Fprintf(stdout, "schema %s migrated from version %d to %d\n", schema, from, target)
	return nil
}

// migrateRedis copies the single-node Redis store of -redis onto the
// sharded store of -redis-to (redisstore.MigrateToShards).
func migrateRedis(ctx context.Context, c migrateConfig, stdout io.Writer) error {
	switch {
	case c.redisFrom == "" || c.redisTo == "":
		return errors.New("-redis and -redis-to go together: the single-node store to copy and the Cluster to copy it onto")
	case c.url != "":
		return errors.New("use -postgres or -redis and -redis-to, not both")
	case c.down || c.to >= 0:
		return errors.New("-down and -to migrate the PostgreSQL schema: the copy onto a Cluster takes neither")
	}
	dst, err := dialRedis(ctx, "redis-to", c.redisTo)
	if err != nil {
		return err
	}
	defer dst.Close()
	src, err := dialRedis(ctx, "redis", c.redisFrom)
	if err != nil {
		return err
	}
	defer src.Close()
	store, err := redisstore.New(dst, redisstore.Config{})
	if err != nil {
		return err
	}
	moved, err := redisstore.MigrateToShards(ctx, src, store)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "copied %d keys and %d index entries onto the shards; point every process at -redis-to\n", moved.Keys, moved.Index)
	return nil
}
