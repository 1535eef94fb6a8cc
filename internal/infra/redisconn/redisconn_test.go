package redisconn

import (
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestParse(t *testing.T) {
	t.Parallel()
	type want struct {
		kind                 Kind
		addrs                []string
		db                   int
		user, password       string
		master               string
		sentinelUser, sentPw string
		tls                  bool
		serverName           string
	}
	for _, tc := range []struct {
		url  string
		want want
	}{
		{"redis://localhost:6379/0", want{kind: Single, addrs: []string{"localhost:6379"}}},
		{"redis://localhost", want{kind: Single, addrs: []string{"localhost:6379"}}},
		{"redis://localhost/", want{kind: Single, addrs: []string{"localhost:6379"}}},
		{"redis://10.0.0.5:6380/3", want{kind: Single, addrs: []string{"10.0.0.5:6380"}, db: 3}},
		{"redis://[::1]:6379/2", want{kind: Single, addrs: []string{"[::1]:6379"}, db: 2}},
		{"redis://[::1]", want{kind: Single, addrs: []string{"[::1]:6379"}}},
		{"redis://:s3cret@redis:6379/0", want{kind: Single, addrs: []string{"redis:6379"}, password: "s3cret"}},
		{"redis://app:p%40ss%3Aw%2Fd@redis:6379", want{kind: Single, addrs: []string{"redis:6379"}, user: "app", password: "p@ss:w/d"}},
		{"rediss://app:pw@redis.example.com:6380/1", want{kind: Single, addrs: []string{"redis.example.com:6380"}, db: 1,
			user: "app", password: "pw", tls: true, serverName: "redis.example.com"}},

		{"redis-sentinel://s1:26379,s2:26379,s3:26379/0?master_name=mymaster", want{kind: Sentinel,
			addrs: []string{"s1:26379", "s2:26379", "s3:26379"}, master: "mymaster"}},
		{"redis-sentinel://s1,s2:26380?master_name=m", want{kind: Sentinel,
			addrs: []string{"s1:26379", "s2:26380"}, master: "m"}},
		{"redis-sentinel://app:pw@10.0.0.1:26379/2?master_name=wr&sentinel_username=sen&sentinel_password=spw", want{kind: Sentinel,
			addrs: []string{"10.0.0.1:26379"}, db: 2, user: "app", password: "pw", master: "wr", sentinelUser: "sen", sentPw: "spw"}},
		{"rediss-sentinel://s1:26379,s2:26379?master_name=m", want{kind: Sentinel,
			addrs: []string{"s1:26379", "s2:26379"}, master: "m", tls: true}},

		{"redis-cluster://n1:6379,n2:6379,n3:6379", want{kind: Cluster, addrs: []string{"n1:6379", "n2:6379", "n3:6379"}}},
		{"redis-cluster://n1:7000", want{kind: Cluster, addrs: []string{"n1:7000"}}},
		{"redis-cluster://:pw@n1,n2/0", want{kind: Cluster, addrs: []string{"n1:6379", "n2:6379"}, password: "pw"}},
		{"rediss-cluster://app:pw@n1:6379,n2:6379", want{kind: Cluster, addrs: []string{"n1:6379", "n2:6379"},
			user: "app", password: "pw", tls: true}},
	} {
		t.Run(tc.url, func(t *testing.T) {
			o, err := Parse(tc.url)
			if err != nil {
				t.Fatal(err)
			}
			w := tc.want
			if k := KindOf(o); k != w.kind {
				t.Errorf("kind %s, want %s", k, w.kind)
			}
			if strings.Join(o.Addrs, " ") != strings.Join(w.addrs, " ") {
				t.Errorf("addrs %q, want %q", o.Addrs, w.addrs)
			}
			if o.DB != w.db || o.Username != w.user || o.Password != w.password || o.MasterName != w.master ||
				o.SentinelUsername != w.sentinelUser || o.SentinelPassword != w.sentPw {
				t.Errorf("db %d user %q password %q master %q sentinel %q/%q, want %d %q %q %q %q/%q",
					o.DB, o.Username, o.Password, o.MasterName, o.SentinelUsername, o.SentinelPassword,
					w.db, w.user, w.password, w.master, w.sentinelUser, w.sentPw)
			}
			if (o.TLSConfig != nil) != w.tls {
				t.Fatalf("TLS %v, want %v", o.TLSConfig != nil, w.tls)
			}
			if w.tls && (o.TLSConfig.ServerName != w.serverName || o.TLSConfig.MinVersion == 0 || o.TLSConfig.InsecureSkipVerify) {
				t.Errorf("TLS config %+v", o.TLSConfig)
			}
		})
	}
}

// New builds the client of each kind: the store's WAIT needs a
// *redis.Client (one node, or the primary Sentinel names) or a cluster
// client that can name a slot's primary.
func TestNewClientKinds(t *testing.T) {
	t.Parallel()
	for url, check := range map[string]func(redis.UniversalClient) bool{
		"redis://localhost:6379/0":                  func(c redis.UniversalClient) bool { _, ok := c.(*redis.Client); return ok },
		"redis-sentinel://s1:26379?master_name=m":   func(c redis.UniversalClient) bool { _, ok := c.(*redis.Client); return ok },
		"redis-cluster://n1:6379":                   func(c redis.UniversalClient) bool { _, ok := c.(*redis.ClusterClient); return ok },
		"redis-cluster://n1:6379,n2:6379,n3:6379/0": func(c redis.UniversalClient) bool { _, ok := c.(*redis.ClusterClient); return ok },
	} {
		o, err := Parse(url)
		if err != nil {
			t.Fatal(err)
		}
		c := New(o)
		if !check(c) {
			t.Errorf("%s: client %T", url, c)
		}
		if cc, ok := c.(*redis.ClusterClient); ok && cc.Options().ClusterStateReloadInterval != ClusterReload {
			t.Errorf("%s: slot map re-read every %s, want %s", url, cc.Options().ClusterStateReloadInterval, ClusterReload)
		}
		c.Close()
	}
}

func TestParseRefusesMalformed(t *testing.T) {
	t.Parallel()
	const password = "Zq9-secret-Zq9"
	for _, tc := range []struct{ url, says string }{
		{"", "want scheme://"},
		{"localhost:6379", "want scheme://"},
		{"http://localhost:6379", `unknown scheme "http"`},
		{"unix:///tmp/redis.sock", `unknown scheme "unix"`},
		{"redis+sentinel://s1:26379?master_name=m", "unknown scheme"},
		{"redis://", "no host"},
		{"redis://:" + password + "@", "no host"},
		{"redis://localhost:6379,other:6379", "names one node"},
		{"redis://localhost:port", "port must be a number"},
		{"redis://a:b:6379", "want host:port"},
		{"redis://localhost:0", "port must be a number from 1 to 65535"},
		{"redis://localhost:70000", "port must be a number from 1 to 65535"},
		{"redis://localhost:", "port must be"},
		{"redis://:6379", "is not valid"},
		{"redis://local host:6379", "is not valid"},
		{"redis://localhost/x", "database number"},
		{"redis://localhost/-1", "database number"},
		{"redis://localhost/0/1", "database number"},
		{"redis://localhost?dial_timeout=3", `unknown parameter "dial_timeout": a single URL takes none`},
		{"redis://localhost#frag", "no #fragment"},
		{"redis://u:" + password + "#x@localhost", "no #fragment"},
		{"redis://u:" + password + "/x@localhost", "percent-encode"},
		{"redis://u:" + password + "?x@localhost", "percent-encode"},
		{"redis://u:" + password + "%zz@localhost", "password is not valid percent-encoding"},
		{"redis://u%zz:" + password + "@localhost", "user name is not valid"},
		{"redis-sentinel://s1:26379,s2:26379", "needs ?master_name=NAME"},
		{"redis-sentinel://s1:26379?master_name=", "needs ?master_name=NAME"},
		{"redis-sentinel://s1:26379,,s2:26379?master_name=m", "empty host"},
		{"redis-sentinel://s1:26379?master_name=m&master_name=n", "given 2 times"},
		{"redis-sentinel://s1:26379?master=m", `unknown parameter "master": want master_name, sentinel_username, sentinel_password`},
		{"redis-sentinel://s1:26379?master_name=m&x=%zz", "query string is not valid"},
		{"redis-cluster://n1:6379,n2:6379/1", "only database 0"},
		{"redis-cluster://n1:6379?master_name=m", `unknown parameter "master_name": a cluster URL takes none`},
		{"redis-cluster://n1:6379,", "empty host"},
		{"redis-cluster://:" + password + "@n1:x", "port must be a number"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			_, err := Parse(tc.url)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Errorf("error %q, want it to say %q", err, tc.says)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q repeats the password", err)
			}
		})
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"redis://localhost:6379/0":             "redis://localhost:6379/0",
		"redis://:pw@localhost:6379/0":         "redis://:xxxxx@localhost:6379/0",
		"rediss://app:pw@redis:6380":           "rediss://app:xxxxx@redis:6380",
		"redis://app@redis":                    "redis://app@redis",
		"redis://u:p@s/s?x@host":               "redis://u:xxxxx@host",
		"redis-cluster://u:pw@n1:6379,n2:6379": "redis-cluster://u:xxxxx@n1:6379,n2:6379",
		"not a url with a password":            "xxxxx",
		"redis-sentinel://u:pw@s1:26379/0?master_name=m&sentinel_password=spw&sentinel_username=s": "redis-sentinel://u:xxxxx@s1:26379/0?master_name=m&sentinel_password=xxxxx&sentinel_username=s",
		"redis-sentinel://s1?sentinel_password=spw":                                                "redis-sentinel://s1?sentinel_password=xxxxx",
	} {
		if got := Redact(in); got != want {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// NewBlocking's client holds at most the connections it is given, in
// every topology, and leaves the caller's options as they were.
func TestNewBlockingBoundsItsPool(t *testing.T) {
	for _, raw := range []string{
		"redis://localhost:6379/0",
		"redis-sentinel://s1:26379,s2:26379?master_name=m",
		"redis-cluster://n1:7000,n2:7001",
	} {
		o, err := Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		o.PoolSize = 100
		c := NewBlocking(o, 7)
		var size, active, pipeline int
		switch c := c.(type) {
		case *redis.Client:
			size, active, pipeline = c.Options().PoolSize, c.Options().MaxActiveConns, c.Options().PipelinePoolSize
		case *redis.ClusterClient:
			size, active, pipeline = c.Options().PoolSize, c.Options().MaxActiveConns, c.Options().PipelinePoolSize
		default:
			t.Fatalf("%s: a %T", raw, c)
		}
		c.Close()
		if size != 7 || active != 7 || pipeline >= 0 {
			t.Errorf("%s: pool %d, at most %d, pipeline pool %d; want 7, 7 and none", raw, size, active, pipeline)
		}
		if o.PoolSize != 100 {
			t.Errorf("%s: the caller's options changed (pool %d)", raw, o.PoolSize)
		}
	}
}
