// Package failover holds the tests of waitroom on multi-node Redis: a
// Redis Cluster of three primaries and three replicas, and a primary with
// a replica watched by three Sentinels, each on a private Docker network of
// its test. A primary is killed under load; the tests check that the
// service answers 503 (never hangs) until a replica is promoted, recovers
// by itself, and count the acknowledged places the failover lost, with
// the replica WAIT off and on (WAITROOM_REDIS_WAIT_REPLICAS).
//
// The service runs in the test process, built from the same
// WAITROOM_REDIS_URL a deployment would use (config, redisconn, queue,
// httpapi); Docker's container addresses are reachable from the host.
//
//	go test -race -count=1 -v ./internal/testkit/failover/
//	go test -run '^$' -bench EnterReplicaWait -count 6 ./internal/testkit/failover/
package failover
