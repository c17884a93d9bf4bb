package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// The schema is built by versioned migrations, embedded in the binary:
// migrations/NNNN_name.up.sql and NNNN_name.down.sql. They are applied
// only by Migrate or MigrateTo (or `imagegen migrate`), never by New, so
// a host app decides when its database changes. Each run holds an
// advisory lock for the schema and applies its steps in one transaction
// (PostgreSQL DDL is transactional): concurrent runs wait for each
// other, and a failed step leaves the schema as it was. The version
// applied is kept in the table <schema>.schema_migrations.

//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version  int
	name     string
	up, down string
}

// loadMigrations reads the embedded migrations, in version order.
func loadMigrations() ([]migration, error) { return readMigrations(migrationFiles) }

// readMigrations reads the migrations in fsys's folder migrations, in
// version order; versions must run 1, 2, 3… with one name each.
func readMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres store: migrations: %w", err)
	}
	byVersion := map[int]*migration{}
	for _, e := range entries {
		name := e.Name()
		base, dir, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), ".")
		num, label, ok2 := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || !ok2 || err != nil || v <= 0 || (dir != "up" && dir != "down") {
			return nil, fmt.Errorf("postgres store: migration file %q is not NNNN_name.up.sql or .down.sql", name)
		}
		body, err := fs.ReadFile(fsys, "migrations/"+name)
		if err != nil {
			return nil, fmt.Errorf("postgres store: migration %s: %w", name, err)
		}
		m := byVersion[v]
		if m == nil {
			m = &migration{version: v, name: label}
			byVersion[v] = m
		} else if m.name != label {
			// Two branches that each added version v: renumber one.
			return nil, fmt.Errorf("postgres store: two migrations are numbered %d (%s and %s): renumber one", v, m.name, label)
		}
		if dir == "up" {
			m.up = string(body)
		} else {
			m.down = string(body)
		}
	}
	out := make([]migration, 0, len(byVersion))
	for _, m := range byVersion {
		if m.up == "" || m.down == "" {
			return nil, fmt.Errorf("postgres store: migration %d needs both an up and a down file", m.version)
		}
		out = append(out, *m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("postgres store: migration versions must run 1, 2, 3…; found %d at place %d", m.version, i+1)
		}
	}
	return out, nil
}

// LatestVersion is the schema version this build of the package needs.
func LatestVersion() int {
	ms, err := loadMigrations()
	if err != nil {
		return 0
	}
	return len(ms)
}

// Migrate brings schema (created if missing; "" means DefaultSchema) up
// to LatestVersion.
func Migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return MigrateTo(ctx, pool, schema, LatestVersion())
}

// MigrateDown undoes every migration: the store's tables and functions
// are dropped, with their data. The schema itself is left in place (it
// may hold the host app's own tables).
func MigrateDown(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	return MigrateTo(ctx, pool, schema, 0)
}

// MigrateTo applies up or down migrations until schema is at version
// (0 removes everything the migrations created).
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, schema string, version int) error {
	if pool == nil {
		return errors.New("postgres store: pool is required")
	}
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	if version < 0 || version > len(ms) {
		return fmt.Errorf("postgres store: no schema version %d (this build knows 0 to %d)", version, len(ms))
	}
	name := schemaName(schema)
	quoted := pgx.Identifier{name}.Sanitize()
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres store: migrate: %w", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('imagegen.migrate:' || $1))`, name); err != nil {
		return fmt.Errorf("postgres store: migrate: lock: %w", err)
	}
	setup := `CREATE SCHEMA IF NOT EXISTS ` + quoted + `;
CREATE TABLE IF NOT EXISTS ` + quoted + `.schema_migrations (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`
	if _, err := tx.Exec(ctx, setup); err != nil {
		return fmt.Errorf("postgres store: migrate: %w", err)
	}
	current, err := currentVersion(ctx, tx, quoted)
	if err != nil {
		return err
	}
	if current > len(ms) {
		return fmt.Errorf("postgres store: schema %s is at version %d, newer than this build knows (%d)", name, current, len(ms))
	}
	for v := current + 1; v <= version; v++ {
		m := ms[v-1]
		if _, err := tx.Exec(ctx, expand(m.up, quoted)); err != nil {
			return fmt.Errorf("postgres store: migration %d (%s) up: %w", v, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO `+quoted+`.schema_migrations (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("postgres store: migration %d: %w", v, err)
		}
	}
	for v := current; v > version; v-- {
		m := ms[v-1]
		if _, err := tx.Exec(ctx, expand(m.down, quoted)); err != nil {
			return fmt.Errorf("postgres store: migration %d (%s) down: %w", v, m.name, err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM `+quoted+`.schema_migrations WHERE version = $1`, v); err != nil {
			return fmt.Errorf("postgres store: migration %d: %w", v, err)
		}
	}
	if version == 0 {
		if _, err := tx.Exec(ctx, `DROP TABLE `+quoted+`.schema_migrations`); err != nil {
			return fmt.Errorf("postgres store: migrate down: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres store: migrate: commit: %w", err)
	}
	return nil
}

// SchemaVersion returns the version schema is at (0 when the store's
// migrations were never applied there).
func SchemaVersion(ctx context.Context, pool *pgxpool.Pool, schema string) (int, error) {
	quoted := pgx.Identifier{schemaName(schema)}.Sanitize()
	var exists bool
	err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, quoted+".schema_migrations").Scan(&exists)
	if err != nil {
		return 0, fmt.Errorf("postgres store: schema version: %w", err)
	}
	if !exists {
		return 0, nil
	}
	return currentVersion(ctx, pool, quoted)
}

func currentVersion(ctx context.Context, q querier, quoted string) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+quoted+`.schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("postgres store: schema version: %w", err)
	}
	return v, nil
}

// expand puts the quoted schema name into a migration or query.
func expand(sql, quotedSchema string) string {
	return strings.ReplaceAll(sql, "{schema}", quotedSchema)
}
