package httpkit

import (
	"net/http"
	"testing"
)

// replyError is an error reply from Redis, as go-redis hands it over.
type replyError string

func (e replyError) Error() string { return string(e) }
func (replyError) RedisError()     {}

// Replies that mean Redis cannot do the work now, a failover or a slot
// that moved among them, are 503s the client may retry; other replies are
// bugs (500).
func TestRedisRepliesMapped(t *testing.T) {
	for reply, want := range map[string]int{
		"MOVED 3999 10.0.0.7:6379":                   http.StatusServiceUnavailable,
		"ASK 3999 10.0.0.7:6379":                     http.StatusServiceUnavailable,
		"CLUSTERDOWN The cluster is down":            http.StatusServiceUnavailable,
		"READONLY You can't write against a replica": http.StatusServiceUnavailable,
		"NOREPLICAS Not enough good replicas":        http.StatusServiceUnavailable,
		// As Redis 7 words them when a script's write is refused: a
		// primary fenced by min-replicas-to-write, or one just demoted.
		"NOREPLICAS Not enough good replicas to write. script: 38409d23, on @user_script:399.":        http.StatusServiceUnavailable,
		"READONLY You can't write against a read only replica. script: 38409d23, on @user_script:12.": http.StatusServiceUnavailable,
		"ERR Error running script":          http.StatusInternalServerError,
		"WRONGTYPE Operation against a key": http.StatusInternalServerError,
	} {
		if got := Classify(replyError(reply)).Status; got != want {
			t.Errorf("%q: %d, want %d", reply, got, want)
		}
	}
}
