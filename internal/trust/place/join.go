package place

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waitroom/waitroom/internal/engine/queue"
)

// ErrInvalidJoin means a join token is malformed, not signed with the join
// secret, expired, not yet valid, valid for too long (MaxJoinLifetime), for
// another queue, or join tokens are not enabled.
var ErrInvalidJoin = errors.New("place: invalid join token")

// MaxJoinLifetime bounds how far ahead a join token's exp may be. A join
// token is used once, to join, but it names an account's place: one that
// lives for months is a standing key to that place for whoever copies it
// (a log, a shared link), and a site that mints such tokens by mistake is
// told at once instead.
const MaxJoinLifetime = 24 * time.Hour

// MaxSubjectBytes bounds the site's user id in a join token, so that the
// member id ("u:" + sub) fits the queue store's user ids.
const MaxSubjectBytes = queue.MaxUserIDBytes - len("u:")

// Join verifies the join tokens that a site mints for its signed-in users,
// so one account holds one place on every device: a JWT signed with
// HS256 and the shared join secret, with sub = the site's user id,
// aud = the queue and exp, at most MaxJoinLifetime ahead.
type Join struct {
	key []byte
}

// NewJoin returns a verifier for tokens signed with secret (at least
// MinSecretBytes).
func NewJoin(secret []byte) (*Join, error) {
	if len(secret) < MinSecretBytes {
		return nil, errors.New("place: join secret must be at least 32 bytes")
	}
	return &Join{key: append([]byte(nil), secret...)}, nil
}

// joinClaims are a join token's claims: the registered ones and, for a
// place in a lane, the lane.
type joinClaims struct {
	jwt.RegisteredClaims
	Lane string `json:"lane,omitempty"`
}

// Member returns the member id of the site user that token names for
// the queue queueName: "u:" + sub, or with a lane claim the member of
// the user's place in that lane (queue.LaneMember: "l:<lane>:<sub>"). A
// lane claim that cannot name a lane is queue.ErrUnknownLane; whether the
// queue has the lane the store checks as the place is made.
func (j *Join) Member(queueName, token string) (string, error) {
	if j == nil {
		return "", fmt.Errorf("%w: join tokens are not enabled (WAITROOM_JOIN_SECRET)", ErrInvalidJoin)
	}
	// One spelling per token, as for passes (pass.Verifier.Verify): strict
	// decoding, and no CR or LF, which encoding/base64 skips.
	if strings.ContainsAny(token, "\r\n") {
		return "", fmt.Errorf("%w: a line break in the token", ErrInvalidJoin)
	}
	var claims joinClaims
	_, err := jwt.ParseWithClaims(token, &claims, func(*jwt.Token) (any, error) { return j.key, nil },
		jwt.WithStrictDecoding(),
		jwt.WithValidMethods([]string{jwt.SigningMethodHS256.Alg()}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithAudience(queueName))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidJoin, err)
	}
	if time.Until(claims.ExpiresAt.Time) > MaxJoinLifetime { // exp is required: never nil here
		return "", fmt.Errorf("%w: exp is more than %s ahead", ErrInvalidJoin, MaxJoinLifetime)
	}
	member := "u:" + claims.Subject
	if claims.Subject == "" || queue.ValidateUserID(member) != nil {
		return "", fmt.Errorf("%w: sub must be 1-%d bytes of UTF-8 without control characters", ErrInvalidJoin, MaxSubjectBytes)
	}
	if claims.Lane == "" {
		return member, nil
	}
	if !queue.CheckLaneName(claims.Lane) {
		return "", fmt.Errorf("%w: the lane claim %q", queue.ErrUnknownLane, claims.Lane)
	}
	member = queue.LaneMember(claims.Lane, claims.Subject)
	if queue.ValidateUserID(member) != nil {
		return "", fmt.Errorf("%w: sub must be 1-%d bytes with the lane's name", ErrInvalidJoin, MaxSubjectBytes-len(claims.Lane)-1)
	}
	return member, nil
}
