// Package blob holds the implementations of imagegen.BlobStore, the
// store of image bytes (the records stay in the imagegen.Store):
//
//   - blob/memory: a map in this process (the memory store's default);
//   - blob/redis: Redis strings with a TTL (the Redis store's default);
//   - blob/file: a directory, written atomically, sharded, survives
//     restarts;
//   - blob/s3: any S3-compatible object storage, with presigned URLs.
//
// blob/blobtest is the conformance suite every one of them runs. Each
// package has a Config and a New function; Open(ctx, url) in this
// package builds one from a URL (file:///dir, s3://bucket/prefix?...),
// as cmd/imagegen's -blobs flag does.
package blob
