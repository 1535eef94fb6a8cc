// Package soak is the soak check (cmd/waitroom-soak): thousands of
// simulated users against several replicas of the service, one fault per
// phase, then the invariants, from Redis and from the clients' own
// observations.
//
// # The world
//
// Each phase starts its own on loopback, as plain processes (no Docker):
// a redis-server with AOF, or for the failover a primary, its replica and
// three Sentinels, and N replicas of the waitroom binary, each on its own
// port. Redis runs with appendfsync always: it writes and fsyncs every
// write before answering, so a SIGKILL loses nothing acknowledged and
// "nobody lost" holds across a crash (with everysec a crash may lose up
// to a second of acknowledged places, which would make the promise
// empty). The replicas share WAITROOM_SECRET, trust 127.0.0.1 as their
// proxy (each user calls with an X-Forwarded-For address of its own, so
// the per-client rate limits see one client per user), keep admissions
// for 24 h and abandonment off, so a place only ends when its user ends it.
// With Sentinel they connect with a redis-sentinel:// URL and
// WAITROOM_REDIS_WAIT_REPLICAS=1, so an acknowledged write is on the
// replica as well, and both Redis nodes are fenced: min-replicas-to-write 1
// and min-replicas-max-lag 2, so a primary without its replica refuses
// writes (NOREPLICAS, a 503) instead of taking ones a failover would
// discard. Each replica serves its metrics on a port of its own; after the
// load the soak reads how many enters were answered short of the WAIT.
//
// # The users
//
// Each user arrives in the first half of the phase, enters with the real
// API (JSON body, no Origin: a non-browser client) and keeps the place
// credential from the cookie; then polls as poll_after_ms suggests, now
// and then enters again (to the back) or leaves; once admitted it is done
// (POST /done with its pass, as the order page would), leaves, enters
// again or keeps polling; a third come back after leaving. Every call
// goes to a replica picked at random. The seed fixes each user's choices,
// not how the users interleave.
//
// # The faults
//
// A third of the way into the phase: kill-replica (SIGKILL one replica,
// start it again), pause-redis (SIGSTOP for twice the request timeout,
// then SIGCONT), restart-redis (SIGKILL, start again from the AOF),
// failover (SIGKILL the primary; the Sentinels promote the replica, and
// the old primary, started again, becomes its replica: healed once it is
// an online replica, as WAIT needs), switchover (SENTINEL FAILOVER, the
// primary alive: the replica is promoted while the old primary still
// takes calls, until the Sentinels demote it some seconds later; the
// fence makes it refuse writes from the promotion on), or none. "all" is
// every fault but none.
//
// # What a failed call means
//
// A 2xx took effect; a 4xx (rate limited, a refused pass) or a connection
// refused (the replica is down) did not. A 5xx, a timeout or a connection
// lost mid-call is Unknown: it may have taken effect, even later (a script
// already written to a paused Redis runs when it resumes). After an
// Unknown enter, leave or done the user only asks its status until the
// fault has healed and Settle (twice the request timeout) has passed, and
// the checks hold nothing seen in between against the service.
//
// # The invariants (Check)
//
//   - lost: a place that an acknowledged enter made (or a settled status
//     showed), and that no leave or done since may have ended, is
//     NOT_WAITING; or an acknowledged enter is rolled back: the member is
//     later admitted at a time before that enter was sent (the earlier
//     place's admission; Redis and the clients share the host's clock).
//     After the load every member's status is asked once more, so the
//     last word is the service's.
//   - duplicated: one enter admitted twice (two admission starts, the
//     entry pass's adm claim, with no enter between).
//   - inversions (FIFO): A's enter was acknowledged before B's was sent,
//     neither entered again, left or was unsure before being admitted, and
//     B was admitted before A (A later, or never: still waiting at the
//     end). Users admitted by one tick share its start and are not
//     ordered among themselves.
//   - both: a member in both the waiting and the entered set in Redis, or
//     a user seen WAITING after its admission with no enter since.
//   - over-rate: an interval of the history list with more admissions than
//     refill_size, or more admissions seen by the clients (and still in
//     Redis) within one interval's span.
//   - phantoms: places in Redis that no user holds, beyond the enters
//     that never got an answer (each may have made one).
//   - slow: a call longer than the request timeout plus Slack (1 s by
//     default: the service bounds each wait for Redis by the request
//     timeout, then answers; the slack covers the HTTP exchange and
//     scheduling on a loaded two-core machine, far below the client's own
//     timeout, so a hung call shows).
package soak
