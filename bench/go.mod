module github.com/imagegen/imagegen/bench

go 1.26.8

require (
	github.com/google/uuid v1.6.0
	github.com/hibiken/asynq v0.26.0
	github.com/imagegen/imagegen v0.0.0
	github.com/redis/go-redis/v9 v9.23.0
)

require (
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/robfig/cron/v3 v3.0.1 // indirect
	github.com/spf13/cast v1.10.0 // indirect
	go.uber.org/atomic v1.12.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/imagegen/imagegen => ../
