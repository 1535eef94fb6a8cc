// Package redisconn turns WAITROOM_REDIS_URL into a go-redis client of
// the topology it names: a single node, a primary watched by Sentinels, or
// a Redis Cluster. The store only needs the narrow interfaces every
// go-redis client satisfies, so the rest of the service never asks which.
//
//	redis://[user:password@]host[:port][/db]                     one node (6379)
//	rediss://...                                                 the same over TLS
//	redis-sentinel://[user:password@]host:port[,host:port...][/db]?master_name=NAME
//	rediss-sentinel://...                                        the same over TLS
//	redis-cluster://[user:password@]host:port[,host:port...]     any nodes of the cluster
//	rediss-cluster://...                                         the same over TLS
//
// The user and password are the data nodes' (the primary's and replicas').
// Sentinels that ask for a password of their own get it from the
// sentinel_username and sentinel_password query parameters. No other
// parameter is accepted: a typo fails at start-up instead of being ignored.
package redisconn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Kind is the topology a URL names.
type Kind string

// The topologies.
const (
	Single   Kind = "single"
	Sentinel Kind = "sentinel"
	Cluster  Kind = "cluster"
)

// Default ports when a host names none.
const (
	defaultPort         = "6379"
	defaultSentinelPort = "26379"
)

// ClusterReload is how often a cluster client re-reads the slot map while
// it is in use. go-redis re-reads it at once on a MOVED reply, but a dead
// primary sends none: requests for its slots keep failing until the map is
// re-read, 60 s by default. Once a second costs one CLUSTER SLOTS a second
// and bounds that part of a failover to a second.
const ClusterReload = time.Second

// Kind reports the topology of options from Parse.
func KindOf(o *redis.UniversalOptions) Kind {
	switch {
	case o.MasterName != "":
		return Sentinel
	case o.IsClusterMode:
		return Cluster
	default:
		return Single
	}
}

// Parse returns the client options raw names. Its errors never repeat the
// URL, which may hold a password.
//
// It is ours, not go-redis's ParseURL, ParseFailoverURL and
// ParseClusterURL (v9.23), because those read other forms and refuse less:
// their errors are url.Parse's, which quote the whole URL, password
// included; they list further hosts as ?addr=, not host,host (a cluster's
// "n1,n2" becomes the one host "n1,n2:6379"); in a Sentinel URL the user
// and password are the Sentinels', not the data nodes'; Sentinels default
// to port 6379; and they accept what is refused here: no host (localhost),
// ports 0 and 70000, database -1, a #fragment, a database on a cluster,
// and some forty tuning parameters (a typo in one fails; a value given
// twice takes the last).
func Parse(raw string) (*redis.UniversalOptions, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return nil, errors.New("redisconn: want scheme://host:port, e.g. redis://localhost:6379/0")
	}
	var kind Kind
	var useTLS bool
	switch scheme {
	case "redis", "rediss":
		kind, useTLS = Single, scheme == "rediss"
	case "redis-sentinel", "rediss-sentinel":
		kind, useTLS = Sentinel, scheme == "rediss-sentinel"
	case "redis-cluster", "rediss-cluster":
		kind, useTLS = Cluster, scheme == "rediss-cluster"
	default:
		return nil, fmt.Errorf("redisconn: unknown scheme %q: want redis, rediss, redis-sentinel, rediss-sentinel, redis-cluster or rediss-cluster", scheme)
	}
	if strings.Contains(rest, "#") {
		return nil, errors.New("redisconn: a Redis URL has no #fragment (percent-encode a # in the password as %23)")
	}
	// The credentials end at the last @: a password holding a raw / or ?
	// would otherwise be read as a host, and echoed in an error.
	var userinfo string
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		userinfo, rest = rest[:i], rest[i+1:]
		if strings.ContainsAny(userinfo, "@/?") {
			return nil, errors.New("redisconn: percent-encode @ / ? in the user name and password (%40 %2F %3F)")
		}
	}
	rest, rawQuery, _ := strings.Cut(rest, "?")
	hostList, path, _ := strings.Cut(rest, "/")

	o := &redis.UniversalOptions{}
	var err error
	if o.Username, o.Password, err = credentials(userinfo); err != nil {
		return nil, err
	}
	port := defaultPort
	if kind == Sentinel {
		port = defaultSentinelPort
	}
	if o.Addrs, err = addresses(hostList, port); err != nil {
		return nil, err
	}
	if kind == Single && len(o.Addrs) > 1 {
		return nil, errors.New("redisconn: redis:// names one node; for several use redis-sentinel:// or redis-cluster://")
	}
	if o.DB, err = database(path); err != nil {
		return nil, err
	}
	if kind == Cluster && o.DB != 0 {
		return nil, errors.New("redisconn: a Redis Cluster has only database 0")
	}

	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, errors.New("redisconn: the query string is not valid")
	}
	allowed := map[Kind][]string{Sentinel: {"master_name", "sentinel_username", "sentinel_password"}}[kind]
	for key, values := range query {
		if !slices.Contains(allowed, key) {
			if len(allowed) == 0 {
				return nil, fmt.Errorf("redisconn: unknown parameter %q: a %s URL takes none", key, kind)
			}
			return nil, fmt.Errorf("redisconn: unknown parameter %q: want %s", key, strings.Join(allowed, ", "))
		}
		if len(values) != 1 {
			return nil, fmt.Errorf("redisconn: parameter %q given %d times", key, len(values))
		}
	}
	switch kind {
	case Sentinel:
		o.MasterName = query.Get("master_name")
		if o.MasterName == "" {
			return nil, errors.New("redisconn: a Sentinel URL needs ?master_name=NAME, the name the Sentinels monitor")
		}
		o.SentinelUsername = query.Get("sentinel_username")
		o.SentinelPassword = query.Get("sentinel_password")
	case Cluster:
		o.IsClusterMode = true
	}

	if useTLS {
		o.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
		if kind == Single {
			host, _, _ := net.SplitHostPort(o.Addrs[0])
			o.TLSConfig.ServerName = host
		}
		// With several hosts the name is left empty: crypto/tls then checks
		// each connection against the host it dialled.
	}
	return o, nil
}

// credentials decodes "user:password" (either may be empty, both
// percent-encoded).
func credentials(userinfo string) (user, password string, err error) {
	if userinfo == "" {
		return "", "", nil
	}
	rawUser, rawPassword, _ := strings.Cut(userinfo, ":")
	if user, err = url.PathUnescape(rawUser); err != nil {
		return "", "", errors.New("redisconn: the user name is not valid percent-encoding")
	}
	if password, err = url.PathUnescape(rawPassword); err != nil {
		return "", "", errors.New("redisconn: the password is not valid percent-encoding")
	}
	return user, password, nil
}

// addresses splits "host:port,host:port" into host:port addresses, giving
// a host without a port the default one.
func addresses(list, port string) ([]string, error) {
	if list == "" {
		return nil, errors.New("redisconn: no host")
	}
	var addrs []string
	for _, h := range strings.Split(list, ",") {
		if h == "" {
			return nil, errors.New("redisconn: an empty host in the host list")
		}
		host, p := h, port
		// Without a port: "name", "1.2.3.4", "[::1]".
		if strings.Contains(h, ":") && !(strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")) {
			var err error
			if host, p, err = net.SplitHostPort(h); err != nil {
				return nil, fmt.Errorf("redisconn: host %q: want host:port", h)
			}
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if host == "" || strings.ContainsAny(host, "[]/ ") {
			return nil, fmt.Errorf("redisconn: host %q is not valid", h)
		}
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("redisconn: host %q: the port must be a number from 1 to 65535", h)
		}
		addrs = append(addrs, net.JoinHostPort(host, p))
	}
	return addrs, nil
}

// database reads the path: empty, "/" or "/N".
func database(path string) (int, error) {
	if path == "" {
		return 0, nil
	}
	db, err := strconv.Atoi(path)
	if err != nil || db < 0 {
		return 0, errors.New("redisconn: the path must be a database number, e.g. /0")
	}
	return db, nil
}

// New returns a client for o: a *redis.Client for a single node and for
// Sentinel (it asks the Sentinels where the primary is, and follows a
// failover), a *redis.ClusterClient for a cluster.
func New(o *redis.UniversalOptions) redis.UniversalClient {
	switch KindOf(o) {
	case Sentinel:
		return redis.NewFailoverClient(o.Failover())
	case Cluster:
		c := o.Cluster()
		c.ClusterStateReloadInterval = ClusterReload
		return redis.NewClusterClient(c)
	default:
		return redis.NewClient(o.Simple())
	}
}

// Redact returns raw with its passwords replaced by "xxxxx", for logs.
func Redact(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "xxxxx" // not a URL: it could be anything, a password included
	}
	// As in Parse, the credentials end at the last @.
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		userinfo := rest[:i]
		if user, _, hasPassword := strings.Cut(userinfo, ":"); hasPassword {
			userinfo = user + ":xxxxx"
		}
		rest = userinfo + rest[i:]
	}
	return scheme + "://" + sentinelPassword.ReplaceAllString(rest, "${1}xxxxx")
}

var sentinelPassword = regexp.MustCompile(`([?&]sentinel_password=)[^&]*`)

// NewBlocking returns a client of its own for commands that hold a
// connection while they wait (XREADGROUP BLOCK): at most conns
// connections, none of them the request path's. On the shared client each
// such reader would hold one of the pool's connections for its whole
// wait, so enough of them (24 queues' webhook workers with the default
// pool) left the requests none: they failed with "connection
// pool timeout" while Redis was idle. o is not changed.
func NewBlocking(o *redis.UniversalOptions, conns int) redis.UniversalClient {
	c := *o
	c.PoolSize = max(conns, 1)
	c.MaxActiveConns = c.PoolSize // a hard bound: never a connection more
	c.MinIdleConns = 0
	c.MaxIdleConns = c.PoolSize
	c.PipelinePoolSize = -1 // no pipelines here: no second pool beside the bound
	return New(&c)
}
