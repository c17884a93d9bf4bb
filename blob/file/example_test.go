package file_test

import (
	"context"
	"fmt"
	"os"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/blob/file"
	"github.com/imagegen/imagegen/imagegentest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// A Redis store whose image bytes live in a directory: Redis keeps the
// records, the files the bytes (the README's snippet).
func Example() {
	dir, _ := os.MkdirTemp("", "imagegen-images-")
	defer os.RemoveAll(dir)
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	if err := run(context.Background(), rdb, dir); err != nil {
		fmt.Println(err)
	}
	// Output:
	// task success: image/png, bytes on disk: true
}

func run(ctx context.Context, rdb goredis.UniversalClient, dir string) error {
	blobs, err := file.New(file.Config{Dir: dir}) // e.g. /var/lib/imagegen/images
	if err != nil {
		return err
	}
	store, err := redisstore.New(rdb, redisstore.Config{Blobs: blobs})
	if err != nil {
		return err
	}

	svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(1)})
	if err != nil {
		return err
	}
	if _, err := svc.Grant(ctx, "alice", 1, "welcome"); err != nil {
		return err
	}
	sub, err := svc.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"})
	if err != nil {
		return err
	}
	if _, err := svc.RunOnce(ctx); err != nil {
		return err
	}
	task, err := svc.Task(ctx, "alice", sub.TaskID)
	if err != nil {
		return err
	}
	img, err := svc.Image(ctx, task.Images[0])
	if err != nil {
		return err
	}
	_, statErr := os.Stat(blobs.Path(img.ID))
	fmt.Printf("task %s: %s, bytes on disk: %v\n", task.Status, img.ContentType, statErr == nil)
	return nil
}
