// Package redisurl opens a go-redis client from a URL that says which
// kind of Redis deployment it names:
//
//	redis://[[user]:password@]host:port[/db][?opts]      one node (rediss:// for TLS)
//	redis+cluster://[[user]:password@]h1:p1[?addr=h2:p2&addr=…]
//	                                                     a Redis Cluster, given seed nodes
//	                                                     (rediss+cluster:// for TLS)
//	redis+sentinel://[[user]:password@]s1:p1[/db]?master=NAME[&addr=s2:p2…]
//	                                                     a master watched by Sentinel, given
//	                                                     the sentinels (rediss+sentinel://)
//
// The user and password are the data nodes' (the master's and replicas'
// under Sentinel), as in redis://; sentinels that require their own take
// sentinel_username and sentinel_password. Other query options are
// go-redis's (dial_timeout=3s, pool_size=20, …), as its ParseURL,
// ParseClusterURL and ParseFailoverURL read them. Errors never repeat any
// part of the user name or password, whatever the URL looks like (see
// package urlredact).
package redisurl

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	"github.com/imagegen/imagegen/internal/urlredact"
)

// Kind is the kind of deployment a URL names.
type Kind string

// The kinds of deployment.
const (
	Single   Kind = "redis"
	Cluster  Kind = "cluster"
	Sentinel Kind = "sentinel"
)

// Usage says what a URL may look like, for flag help and errors.
const Usage = "redis://[:password@]host:port/db (rediss:// for TLS), redis+cluster://host:port?addr=host2:port2 (a Cluster), or redis+sentinel://host:port/db?master=NAME&addr=host2:port2 (Sentinel)"

// Options are the parsed options of one of the kinds: exactly one of
// Single, Cluster and Failover is set.
type Options struct {
	Kind     Kind
	Single   *goredis.Options
	Cluster  *goredis.ClusterOptions
	Failover *goredis.FailoverOptions
}

// Parse reads a URL of any of the kinds.
func Parse(raw string) (Options, error) {
	u, err := url.Parse(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password and all
		}
		return Options{}, fmt.Errorf("not a Redis URL (%s): %w", Usage, urlredact.Error(err, raw, urlredact.Userinfo))
	}
	scheme, kind, _ := strings.Cut(u.Scheme, "+")
	if scheme != "redis" && scheme != "rediss" {
		return Options{}, fmt.Errorf("unknown Redis URL scheme %q: want %s", u.Scheme, Usage)
	}
	u.Scheme = scheme
	var o Options
	switch kind {
	case "":
		o.Kind = Single
		o.Single, err = goredis.ParseURL(u.String())
	case "cluster":
		o.Kind = Cluster
		o.Cluster, err = goredis.ParseClusterURL(u.String())
	case "sentinel":
		o.Kind = Sentinel
		o.Failover, err = parseSentinel(u)
	default:
		return Options{}, fmt.Errorf("unknown Redis URL scheme %q: want %s", u.Scheme+"+"+kind, Usage)
	}
	if err != nil {
		return Options{}, fmt.Errorf("redis URL: %w", urlredact.Error(err, raw, urlredact.Userinfo))
	}
	return o, nil
}

// parseSentinel reads a redis+sentinel URL (its scheme already plain
// redis or rediss): the userinfo goes to the data nodes, master= names
// the master, sentinel_username and sentinel_password authenticate to
// the sentinels.
func parseSentinel(u *url.URL) (*goredis.FailoverOptions, error) {
	q := u.Query()
	master := q.Get("master")
	if master == "" {
		master = q.Get("master_name")
	}
	if master == "" {
		return nil, errors.New("a redis+sentinel URL needs master=NAME (the name the sentinels monitor)")
	}
	sentinelUser, sentinelPassword := q.Get("sentinel_username"), q.Get("sentinel_password")
	for _, k := range []string{"master", "master_name", "sentinel_username", "sentinel_password"} {
		q.Del(k)
	}
	user := u.User
	u.User = nil
	u.RawQuery = q.Encode()
	o, err := goredis.ParseFailoverURL(u.String())
	if err != nil {
		return nil, err
	}
	o.MasterName = master
	o.SentinelUsername, o.SentinelPassword = sentinelUser, sentinelPassword
	if user != nil {
		o.Username = user.Username()
		o.Password, _ = user.Password()
	}
	return o, nil
}

// Open parses raw and returns a client of its kind (not yet connected).
func Open(raw string) (goredis.UniversalClient, Options, error) {
	o, err := Parse(raw)
	if err != nil {
		return nil, Options{}, err
	}
	return o.NewClient(), o, nil
}

// NewClient returns a client of the options' kind.
func (o Options) NewClient() goredis.UniversalClient {
	switch o.Kind {
	case Cluster:
		return goredis.NewClusterClient(o.Cluster)
	case Sentinel:
		return goredis.NewFailoverClient(o.Failover)
	}
	return goredis.NewClient(o.Single)
}

// String names the deployment without any password: "127.0.0.1:6379 db
// 0", "cluster 10.0.0.1:7000,10.0.0.2:7000", "sentinel master mymaster
// via 10.0.0.1:26379 db 0".
func (o Options) String() string {
	switch o.Kind {
	case Cluster:
		return "cluster " + strings.Join(o.Cluster.Addrs, ",")
	case Sentinel:
		return fmt.Sprintf("sentinel master %s via %s db %d", o.Failover.MasterName, strings.Join(o.Failover.SentinelAddrs, ","), o.Failover.DB)
	case Single:
		return fmt.Sprintf("%s db %d", o.Single.Addr, o.Single.DB)
	}
	return "redis"
}
