package postgres

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/internal/groupcommit"
)

// completeSQL moves each task of the batch whose attempt holds it to
// success, stores its image records (the bytes are already in the blob
// store), queues its callback and announces it (NOTIFY), in one
// statement, and returns the ids of those it moved.
//
//	$1 now  $2 task ids  $3 attempts  $4 retention (µs)
//	$5 per image: its task id  $6 image ids  $7 content types  $8 sizes
//	$9 checksums
//	$10 synchronous_commit for this transaction ("on", or "off" with
//	   Config.AsyncSuccess)
//	$11 the NOTIFY channel of finished tasks: each task moved is
//	   announced when the batch commits
//	$12 per task: the seed the model used, written into the request's
//	   seed (the task's recorded seed); NULL keeps the request's
//	$13 per image: its bytes, stored in the blobs table with the
//	   success (CompleteTaskWithBytes), or NULL when they are stored
//	   already (CompleteTask); only a moved task's are kept
//
// The batch finds its tasks by id (the primary key), one probe a task:
// the fencing token's status comes from the input (a materialized CTE)
// rather than as a constant, so that the planner cannot read
// status = 'processing' as the predicate of tasks_leases. It did, when
// the statistics said few tasks were processing (a young table, or one
// analyzed while the queue was idle): it read every entry of tasks_leases
// and hash-joined them with the batch, and since a bitmap scan never
// marks an index entry dead, that meant the entry of every task run
// since the last vacuum (1,264 entries and 83 heap pages for a batch of
// 8 in the bench pipeline, 3000 tasks). TestCompleteFindsTasksByID.
//
// Each task's image ids are grouped once for the batch (input, a hash
// aggregate and join), not looked up in the batch's images for every
// task updated, which read all of them each time: perf of the backends
// in the bench pipeline (batches of about 25), that subquery 3.6 % of
// their CPU, the aggregate and join 2.2 % now (both figures include
// other hash nodes of the statement's).
const completeSQL = `
WITH async AS (
	SELECT set_config('synchronous_commit', $10, true)
), imgs AS (
	SELECT * FROM unnest($5::text[], $6::text[], $7::text[], $8::bigint[], $9::text[], $13::bytea[]) WITH ORDINALITY
		AS m(task_id, id, content_type, size, checksum, data, ord)
), input AS MATERIALIZED (
	SELECT i.*, 'processing'::text AS status, coalesce(g.ids, '{}') AS images
	FROM unnest($2::text[], $3::integer[], $12::bigint[]) AS i(id, attempt, seed)
	LEFT JOIN (SELECT m.task_id, array_agg(m.id ORDER BY m.ord) AS ids FROM imgs m GROUP BY m.task_id) g ON g.task_id = i.id
), done AS (
	UPDATE {schema}.tasks t
	SET status = 'success', lease_until = NULL, updated_at = {now}, finished_at = {now},
		images = i.images,
		expires_at = {now} + $4 * interval '1 microsecond',
		request = CASE WHEN i.seed IS NULL THEN t.request ELSE jsonb_set(t.request, '{seed}', to_jsonb(i.seed)) END
	FROM input i, async
	WHERE t.id = i.id AND t.status = i.status AND t.attempt = i.attempt
	RETURNING t.id, t.owner, t.expires_at, t.callback_url, t.callback_events
), hooks AS (
	INSERT INTO {schema}.webhooks (id, task_id, event, due)
	SELECT done.id, done.id, 'completed', {now} FROM done
	WHERE done.callback_url <> '' AND {schema}.wants(done.callback_events, 'completed')
	ON CONFLICT (id) DO NOTHING
), stored AS (
	INSERT INTO {schema}.images (id, task_id, owner, content_type, size, checksum, created_at, expires_at)
	SELECT m.id, done.id, done.owner, m.content_type, m.size, m.checksum, {now}, done.expires_at
	FROM done JOIN imgs m ON m.task_id = done.id
), bytes AS (
	INSERT INTO {schema}.blobs (key, data, content_type, written_at)
	SELECT m.id, m.data, m.content_type, {now} FROM done JOIN imgs m ON m.task_id = done.id WHERE m.data IS NOT NULL
	` + blobUpsert + `
)
SELECT done.id FROM done CROSS JOIN LATERAL pg_notify($11, done.id) AS notified`

// genericPlanSQL goes before completeSQL in the same round trip and
// implicit transaction (a pgx batch), so that the success keeps the
// generic plan of its prepared statement. The plan cache otherwise chose
// by the statement's first executions on each connection: where those
// were successes of one task (a slow model's), the custom plan, which
// sees the arrays' lengths, looked cheaper, and the whole statement was
// planned afresh at every success (in process, successes of one task:
// 0.28 ms a success with the generic plan against 0.71 ms, pgbench).
const genericPlanSQL = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true)`

type completeReq struct {
	id      string
	attempt int
	images  []imagegen.Image
	data    [][]byte // the images' bytes (CompleteTaskWithBytes), or nil
	seed    *int64
}

// completeSize is a success's size in a batch: its image bytes.
func completeSize(r completeReq) int {
	n := 0
	for _, d := range r.data {
		n += len(d)
	}
	return n
}

type completeCall = groupcommit.Call[completeReq, bool]

// CompleteTask stores the images and moves the task to success. Calls
// that arrive together share one statement and one commit (group
// commit); each is checked against its own fencing token.
func (s *Store) CompleteTask(ctx context.Context, id string, attempt int, images []imagegen.Image, seed *int64) error {
	for _, img := range images {
		if img.ID == "" {
			return errors.New("postgres store: image needs an ID")
		}
	}
	held, err := s.completes.Do(ctx, completeReq{id: id, attempt: attempt, images: images, seed: seed})
	return s.fenced(id, attempt, held, err)
}

// CompleteTaskWithBytes is CompleteTask that also writes the images'
// bytes to the blobs table in the same statement and commit
// (imagegen.BytesCompleter): a success then costs one statement, shared
// by the batch, instead of a batch of blob puts and then the success.
// Only the bytes of a task whose attempt holds it are kept. done is false
// when the store's Blobs() is Config.Blobs, not the table.
func (s *Store) CompleteTaskWithBytes(ctx context.Context, id string, attempt int, images []imagegen.Image,
	data [][]byte, seed *int64) (bool, error) {
	if s.blobStore != nil {
		return false, nil
	}
	if len(data) != len(images) {
		return true, fmt.Errorf("postgres store: complete task %s: %d images, %d byte slices", id, len(images), len(data))
	}
	for _, img := range images {
		if err := imagegen.CheckBlobKey(img.ID); err != nil {
			return true, fmt.Errorf("postgres store: complete task %s: %w", id, err)
		}
	}
	held, err := s.completes.Do(ctx, completeReq{id: id, attempt: attempt, images: images, data: data, seed: seed})
	return true, s.fenced(id, attempt, held, err)
}

// completeBatch runs completeSQL for a batch, tasks in id order (so that
// concurrent batches lock rows in one order). A batch that fails as a
// whole (a deadlock, an image id taken), or that holds two calls for one
// task, is run again one task at a time, so that one bad call fails
// alone.
func (s *Store) completeBatch(ctx context.Context, batch []*completeCall) {
	sort.Slice(batch, func(i, j int) bool { return batch[i].Req.id < batch[j].Req.id })
	// The statement tells its calls apart by task id (the tasks it
	// moved, the images it records): two calls for one task (a
	// superseded attempt's and the current one's) would both be told
	// they held it, and the images of both would be recorded. Such a
	// batch runs a call at a time, each fenced by its own attempt.
	for i := 1; i < len(batch); i++ {
		if batch[i].Req.id == batch[i-1].Req.id {
			for _, c := range batch {
				s.completeBatch(ctx, []*completeCall{c})
			}
			return
		}
	}
	ids := make([]string, len(batch))
	attempts := make([]int32, len(batch))
	seeds := make([]*int64, len(batch))
	var imgTasks, imgIDs, types, sums []string
	var sizes []int64
	var data [][]byte
	for i, c := range batch {
		ids[i], attempts[i], seeds[i] = c.Req.id, int32(c.Req.attempt), c.Req.seed
		for j, img := range c.Req.images {
			imgTasks, imgIDs, types = append(imgTasks, c.Req.id), append(imgIDs, img.ID), append(types, img.ContentType)
			sizes, sums = append(sizes, img.Size), append(sums, img.Checksum)
			var d []byte // NULL: stored already
			if c.Req.data != nil {
				d = c.Req.data[j]
				if d == nil {
					d = []byte{}
				}
			}
			data = append(data, d)
		}
	}
	var b pgx.Batch
	b.Queue(genericPlanSQL)
	b.Queue(s.sql(completeSQL), s.nowArg(), ids, attempts, micros(s.retention), imgTasks, imgIDs, types, sizes, sums, s.successCommit, s.finished, seeds, data)
	br := s.pool.SendBatch(ctx, &b)
	_, err := br.Exec()
	var moved []string
	if err == nil {
		var rows pgx.Rows
		if rows, err = br.Query(); err == nil {
			moved, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil && len(batch) > 1 {
		for _, c := range batch {
			s.completeBatch(ctx, []*completeCall{c})
		}
		return
	}
	held := make(map[string]bool, len(moved))
	for _, id := range moved {
		held[id] = true
	}
	for _, c := range batch {
		c.Res, c.Err = held[c.Req.id], err
		if err == nil && !c.Res && len(c.Req.images) > 0 {
			c.Res, c.Err = s.completedAlready(ctx, c.Req)
		}
	}
}

// completedAlreadySQL says whether task $1 is a success of attempt $2
// with exactly the images $3.
const completedAlreadySQL = `SELECT EXISTS (SELECT 1 FROM {schema}.tasks WHERE id = $1 AND status = 'success' AND attempt = $2 AND images = $3::text[])`

// completedAlready reports whether the success r, which its statement
// did not move, was recorded before by r itself: a batch whose reply
// was lost after its commit (a connection cut) runs again a call at a
// time, and each call then finds its task a success already. Its image
// ids, random and new to the success, make that a proof. Without it such
// a call said ErrLeaseLost, on which the worker deletes the image bytes
// it put in Config.Blobs: live records without their bytes.
func (s *Store) completedAlready(ctx context.Context, r completeReq) (bool, error) {
	ids := make([]string, len(r.images))
	for i, img := range r.images {
		ids[i] = img.ID
	}
	var done bool
	err := s.pool.QueryRow(ctx, s.sql(completedAlreadySQL), r.id, int32(r.attempt), ids).Scan(&done)
	if err != nil {
		return false, fmt.Errorf("check an earlier run of the success: %w", err)
	}
	return done, nil
}

// FailTask moves the task to failed and refunds it once.
func (s *Store) FailTask(ctx context.Context, id string, attempt int, f imagegen.Failure) (int64, error) {
	var refund int64
	err := s.pool.QueryRow(ctx, s.sql(`SELECT {schema}.fail_task_refund($2, $3, $4, $5, {now}, $6 * interval '1 microsecond', $7)`),
		s.nowArg(), id, attempt, string(f.Code), f.Message, micros(s.retention), s.finished).Scan(&refund)
	if err := s.fenced(id, attempt, refund >= 0, err); err != nil {
		return 0, err
	}
	return refund, nil
}

// CancelTask fails owner's pending or processing task and refunds it,
// but for a processing one's when p.KeepStartedCharge
// (cancel_task_charged, migration 32, decides under the row's lock).
func (s *Store) CancelTask(ctx context.Context, owner, id string, p imagegen.CancelParams) (int64, error) {
	var n int64
	err := s.pool.QueryRow(ctx, s.sql(`SELECT {schema}.cancel_task_charged($2, $3, $4, $5, {now}, $6 * interval '1 microsecond', $7, $8)`),
		s.nowArg(), owner, id, string(imagegen.CodeCancelled), imagegen.CancelledMessage, micros(s.retention), s.finished,
		p.KeepStartedCharge).Scan(&n)
	switch {
	case err != nil:
		return 0, s.wrapErr("cancel", err)
	case n == -1:
		return 0, imagegen.ErrTaskNotFound
	case n < 0:
		return 0, fmt.Errorf("postgres store: cancel task %s: %w", id, imagegen.ErrInvalidTransition)
	}
	return n, nil
}
