package main

import (
	"bytes"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/matryer/is"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob"
	"github.com/imagegen/imagegen/blob/blobtest"
	"github.com/imagegen/imagegen/internal/testenv"
	"github.com/imagegen/imagegen/internal/testenv/redistest"
	"github.com/imagegen/imagegen/internal/testenv/s3test"
)

// largestValue returns the largest value in Redis (bytes of a string;
// for a hash, list, set or sorted set, its fields and members added up)
// and its key.
func largestValue(t *testing.T, rdb *goredis.Client) (string, int) {
	t.Helper()
	var biggest string
	most := 0
	for _, k := range redistest.Keys(t, rdb, "*") {
		n := 0
		switch rdb.Type(ctx, k).Val() {
		case "string":
			n = len(rdb.Get(ctx, k).Val())
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				n += len(f) + len(v)
			}
		case "list":
			for _, v := range rdb.LRange(ctx, k, 0, -1).Val() {
				n += len(v)
			}
		case "set":
			for _, v := range rdb.SMembers(ctx, k).Val() {
				n += len(v)
			}
		case "zset":
			for _, v := range rdb.ZRange(ctx, k, 0, -1).Val() {
				n += len(v) + 8
			}
		}
		if n > most {
			biggest, most = k, n
		}
	}
	return biggest, most
}

// blobFiles lists the image files under dir (not the temporary ones).
func blobFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".tmp" {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func get(t *testing.T, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	is.New(t).NoErr(err)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	is.New(t).NoErr(err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	is.New(t).NoErr(err)
	return resp, body
}

// serve -redis ... -blobs file://DIR: 20 tasks leave 20 PNG files, no
// image bytes in Redis, URLs that stream the same bytes (304 on
// If-None-Match) and still work after serve restarts; retention then
// removes the files.
func TestServeRedisWithFileBlobs(t *testing.T) {
	dir := t.TempDir()
	testServeWithBlobs(t, "file://"+dir, func() int { return len(blobFiles(t, dir)) })
}

// The same with -blobs s3://bucket/prefix: on an in-process gofakes3 the
// serve process reaches over loopback, or on IMAGEGEN_TEST_S3
// (moto_server).
func TestServeRedisWithS3Blobs(t *testing.T) {
	endpoint := s3test.Fake(t)
	if os.Getenv(s3test.EnvVar) != "" {
		endpoint = s3test.Real(t)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", "test") // the serve processes' credentials, from the standard chain
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	prefix := "serve-" + uuid.NewString()
	u := "s3://" + s3test.Bucket + "/" + prefix + "?endpoint=" + url.QueryEscape(endpoint) +
		"&region=" + s3test.Region + "&path_style=true&checksum=when_required"
	// The restarted serve redirects downloads to presigned URLs.
	testServeWithBlobs(t, u, nil, "-image-presign", "1m")
}

// testServeWithBlobs runs the scenario on serve -blobs blobsURL. count,
// when set, counts the images by another way than the BlobStore (files
// on disk). restartArgs are added to the second serve's flags; with
// them, downloads are expected to be redirected (-image-presign).
func testServeWithBlobs(t *testing.T, blobsURL string, count func() int, restartArgs ...string) {
	is := is.New(t)
	redisURL, rdb, passTime := testRedisURL(t)
	blobs, err := blob.Open(ctx, blobsURL) // the test's own view of the same store
	is.NoErr(err)
	t.Cleanup(func() { deleteBlobs(t, blobs) })
	if count == nil {
		count = func() int { return len(listBlobs(t, blobs)) }
	}
	const key = "blob-test-key-0123456789"
	args := []string{
		"-redis", redisURL, "-blobs", blobsURL, "-demo-key", key, "-demo-credits", "100",
		"-rate-limit", "100000", "-placeholder-delay", "0", "-workers", "4",
		"-retention", "30s", "-blob-sweep", "1s", "-orphan-grace", "35s",
	}
	p, base := startServeProcess(t, args...)

	ids := make([]string, 20)
	for i := range ids {
		code, sub := httpCall(t, "POST", base+"/api/v1/generate", key, `{"scene":"text-to-image","prompt":"a lighthouse","aspect_ratio":"1:1"}`)
		is.Equal(code, http.StatusCreated)
		ids[i] = sub["task_id"].(string)
	}
	var paths []string // the images' signed URLs, host left out
	for _, id := range ids {
		var task map[string]any
		testenv.Eventually(t, 20*time.Second, "task "+id+" succeeds", func() bool {
			_, task = httpCall(t, "GET", base+"/api/v1/tasks/"+id, key, "")
			return task["status"] == "success"
		})
		u := task["images"].([]any)[0].(string)
		paths = append(paths, u[strings.Index(u, "/api/v1/"):])
	}

	// 20 images in the blob store, and nothing image-sized in Redis.
	is.Equal(count(), 20)
	is.Equal(len(listBlobs(t, blobs)), 20)
	biggestKey, biggest := largestValue(t, rdb)
	if biggest >= 10<<10 {
		t.Fatalf("Redis key %s holds %d bytes; image bytes belong in the blob store", biggestKey, biggest)
	}

	etags := map[string]string{}
	for _, path := range paths {
		resp, body := get(t, base+path)
		is.Equal(resp.StatusCode, http.StatusOK)
		is.True(bytes.HasPrefix(body, []byte("\x89PNG")))
		id := path[len("/api/v1/images/"):strings.Index(path, "?")]
		_, stored := blobtest.ReadAll(t, blobs, id)
		is.True(bytes.Equal(body, stored)) // the same bytes as stored
		etags[path] = resp.Header.Get("ETag")
		is.True(etags[path] != "")
		resp, body = get(t, base+path, "If-None-Match", etags[path])
		is.Equal(resp.StatusCode, http.StatusNotModified)
		is.Equal(len(body), 0)
	}

	// A new serve process (same Redis, same blob store) serves the same URLs.
	p.stop(t)
	_, base = startServeProcess(t, append(args, restartArgs...)...)
	for _, path := range paths {
		resp, body := get(t, base+path) // redirects are followed
		is.Equal(resp.StatusCode, http.StatusOK)
		is.True(bytes.HasPrefix(body, []byte("\x89PNG")))
		redirected := !strings.HasPrefix(resp.Request.URL.String(), base)
		is.Equal(redirected, len(restartArgs) > 0)
		if !redirected {
			is.Equal(resp.Header.Get("ETag"), etags[path])
		}
	}

	// Retention (30s) ends the records; the sweep then deletes the bytes
	// (once they are older than -orphan-grace).
	passTime(31 * time.Second)
	testenv.Eventually(t, 60*time.Second, "retention removes the images' bytes", func() bool {
		return count() == 0
	})
	resp, _ := get(t, base+paths[0])
	is.Equal(resp.StatusCode, http.StatusNotFound)
}

func listBlobs(t *testing.T, s imagegen.BlobStore) []string {
	t.Helper()
	var keys []string
	if err := s.List(ctx, func(b imagegen.BlobInfo) error { keys = append(keys, b.Key); return nil }); err != nil {
		t.Fatalf("list blobs: %v", err)
	}
	return keys
}

// deleteBlobs removes whatever a failed test left in its store.
func deleteBlobs(t *testing.T, s imagegen.BlobStore) {
	for _, k := range listBlobs(t, s) {
		_ = s.Delete(ctx, k)
	}
}
