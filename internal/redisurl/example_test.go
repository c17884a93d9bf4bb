package redisurl_test

import (
	"fmt"

	"github.com/imagegen/imagegen/internal/redisurl"
)

func ExampleParse() {
	for _, u := range []string{
		"redis://127.0.0.1:6379/0",
		"redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001",
		"redis+sentinel://127.0.0.1:26379/0?master=mymaster&addr=127.0.0.1:26380",
	} {
		o, err := redisurl.Parse(u)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(o.Kind+":", o)
	}
	// Output:
	// redis: 127.0.0.1:6379 db 0
	// cluster: cluster 127.0.0.1:7000,127.0.0.1:7001
	// sentinel: sentinel master mymaster via 127.0.0.1:26379,127.0.0.1:26380 db 0
}
