package redistest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/imagegen/imagegen/internal/testenv"
	goredis "github.com/redis/go-redis/v9"
)

// SentinelMaster is the name the test sentinels monitor.
const SentinelMaster = "imagegen"

// Sentinels is a master, its replica and three sentinels of the test's
// own, every one a process on a free loopback port.
type Sentinels struct {
	Master, Replica *Server
	Sentinels       []*Server
}

// StartSentinels starts a master, a replica of it and three sentinels
// that monitor it (quorum 2; down after 1 s), waits until the sentinels
// know each other and the replica, and stops them all when the test
// ends. It skips like Binary; extra arguments go to both data nodes.
func StartSentinels(t testing.TB, extra ...string) *Sentinels {
	t.Helper()
	s := &Sentinels{Master: StartServer(t, 0, extra...)}
	s.Replica = StartServer(t, 0, append([]string{"--replicaof", "127.0.0.1", strconv.Itoa(s.Master.Port)}, extra...)...)
	s.Replica.WaitInSync(t, 20*time.Second)
	for range 3 {
		port := FreePort(t)
		dir := t.TempDir()
		conf := writeConfig(t, dir, "sentinel.conf", fmt.Sprintf(`bind 127.0.0.1
port %d
dir %s
sentinel monitor %s 127.0.0.1 %d 2
sentinel down-after-milliseconds %[3]s 1000
sentinel failover-timeout %[3]s 10000
sentinel parallel-syncs %[3]s 1
`, port, dir, SentinelMaster, s.Master.Port))
		s.Sentinels = append(s.Sentinels, startProcess(t, port, dir, []string{conf, "--sentinel"}))
	}
	for _, sn := range s.Sentinels {
		rdb := goredis.NewSentinelClient(&goredis.Options{Addr: sn.Addr()})
		testenv.EventuallyNoError(t, 30*time.Second, "the sentinels know each other and the replica", func() error {
			m, err := rdb.Master(context.Background(), SentinelMaster).Result()
			if err != nil {
				return err
			}
			if m["num-other-sentinels"] != "2" || m["num-slaves"] != "1" {
				return fmt.Errorf("sentinel %s: %v other sentinels, %v replicas", sn.Addr(), m["num-other-sentinels"], m["num-slaves"])
			}
			return nil
		})
		_ = rdb.Close()
	}
	return s
}

// URL is the redis+sentinel:// URL of the set, database db.
func (s *Sentinels) URL(db int) string {
	q := []string{"master=" + SentinelMaster}
	for _, sn := range s.Sentinels[1:] {
		q = append(q, "addr="+sn.Addr())
	}
	return fmt.Sprintf("redis+sentinel://%s/%d?%s", s.Sentinels[0].Addr(), db, strings.Join(q, "&"))
}

// Client returns a failover client of the set, closed when the test ends.
func (s *Sentinels) Client(t testing.TB) *goredis.Client {
	t.Helper()
	var addrs []string
	for _, sn := range s.Sentinels {
		addrs = append(addrs, sn.Addr())
	}
	rdb := goredis.NewFailoverClient(&goredis.FailoverOptions{MasterName: SentinelMaster, SentinelAddrs: addrs})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// MasterAddr is the master's address as the first answering sentinel
// says it is now.
func (s *Sentinels) MasterAddr(t testing.TB) string {
	t.Helper()
	for _, sn := range s.Sentinels {
		if sn.PID() == 0 {
			continue
		}
		rdb := goredis.NewSentinelClient(&goredis.Options{Addr: sn.Addr()})
		addr, err := rdb.GetMasterAddrByName(context.Background(), SentinelMaster).Result()
		_ = rdb.Close()
		if err == nil && len(addr) == 2 {
			return addr[0] + ":" + addr[1]
		}
	}
	return ""
}
