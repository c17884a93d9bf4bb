package redis_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen"
	"github.com/imagegen/imagegen/imagegentest"
	redisstore "github.com/imagegen/imagegen/store/redis"
)

// Two services on one Redis, as an API process and a worker process
// would be: a task submitted through one is run by the other, and both
// see the same balance. (miniredis stands in for Redis here; give New any
// redis.UniversalClient: standalone, Sentinel or Cluster.)
func Example() {
	ctx := context.Background()
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		panic(err)
	}
	defer mr.Close()
	rdb := goredis.NewClient(&goredis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	service := func() *imagegen.Service {
		store, err := redisstore.New(rdb, redisstore.Config{Prefix: "example"})
		if err != nil {
			panic(err)
		}
		svc, err := imagegen.New(imagegen.Config{Store: store, Model: imagegentest.NewModel(2), Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			panic(err)
		}
		return svc
	}
	api, worker := service(), service()

	if _, err := api.Grant(ctx, "alice", 5, "signup"); err != nil {
		panic(err)
	}
	sub, err := api.Submit(ctx, "alice", imagegen.Request{Scene: imagegen.SceneTextToImage, Prompt: "a red fox"})
	if err != nil {
		panic(err)
	}
	ran, err := worker.RunOnce(ctx)
	if err != nil {
		panic(err)
	}
	task, err := api.Task(ctx, "alice", sub.TaskID)
	if err != nil {
		panic(err)
	}
	balance, err := worker.Balance(ctx, "alice")
	if err != nil {
		panic(err)
	}
	fmt.Println(ran, task.Status, len(task.Images), balance)
	// Output: true success 1 3
}
