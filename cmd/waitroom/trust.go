package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"

	"github.com/waitroom/waitroom/internal/config"
	"github.com/waitroom/waitroom/internal/trust/challenge"
	"github.com/waitroom/waitroom/internal/trust/invite"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"github.com/waitroom/waitroom/internal/trust/place"
	"github.com/waitroom/waitroom/internal/trust/secrets"
)

// trust is what proves a user's place and pass: the place credentials,
// the entry passes, the proof-of-work challenges, and the joins a site
// signs for its users (nil without a join secret).
type trust struct {
	// secret is WAITROOM_SECRET, or the shared generated one: the keys
	// of place credentials, challenges, API tokens and sign-in cookies
	// are derived from it.
	secret     []byte
	places     *place.Credentials
	passes     *pass.Passes
	challenges *challenge.Challenges
	join       *place.Join
	// codes digests invitation codes, under a key derived from secret.
	codes *invite.Codes
}

// Fields of rediskeys.Secrets that hold what replicas share when the operator
// configured none.
const (
	placeSecretField = "place_secret"
	signingKeyField  = "pass_signing_key"
)

// loadTrust builds the place credentials, the proof-of-work challenges
// and the entry passes from the configured secret and key file, or from
// the ones the first replica generated and keeps in Redis.
func loadTrust(ctx context.Context, cfg config.Config, rdb secrets.Redis) (trust, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	secret := cfg.Secret
	if len(secret) == 0 {
		var err error
		secret, err = secrets.Shared(ctx, rdb, placeSecretField, func() ([]byte, error) {
			b := make([]byte, place.MinSecretBytes)
			_, err := rand.Read(b)
			return b, err
		})
		if err != nil {
			return trust{}, err
		}
	}
	places, err := place.New(secret)
	if err != nil {
		return trust{}, errFatal{err}
	}
	// The challenges' key is derived from the same secret, so every
	// replica shares it and the operator keeps one secret.
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("waitroom proof-of-work challenge key v1"))
	challenges, err := challenge.New(mac.Sum(nil))
	if err != nil {
		return trust{}, errFatal{err}
	}
	codes, err := invite.New(secret)
	if err != nil {
		return trust{}, errFatal{err}
	}
	passes, err := loadPasses(ctx, cfg, rdb)
	if err != nil {
		return trust{}, err
	}
	return trust{secret: secret, places: places, passes: passes, challenges: challenges, codes: codes}, nil
}

// loadPasses builds the entry passes from the configured key file, or
// from the key the first replica generated and keeps in Redis.
func loadPasses(ctx context.Context, cfg config.Config, rdb secrets.Redis) (*pass.Passes, error) {
	var keyPEM []byte
	var err error
	if cfg.SigningKeyFile != "" {
		if keyPEM, err = os.ReadFile(cfg.SigningKeyFile); err != nil {
			return nil, errFatal{fmt.Errorf("WAITROOM_SIGNING_KEY_FILE: %w", err)}
		}
	} else if keyPEM, err = secrets.Shared(ctx, rdb, signingKeyField, pass.GenerateKeyPEM); err != nil {
		return nil, err
	}
	keys, err := pass.ParseKeys(keyPEM)
	if err != nil {
		return nil, errFatal{fmt.Errorf("signing keys: %w", err)}
	}
	passes, err := pass.New(keys, cfg.Issuer)
	if err != nil {
		return nil, errFatal{err}
	}
	return passes, nil
}

// addJoin adds the joins a site signs for its users, given a join secret.
func (t *trust) addJoin(cfg config.Config) error {
	if len(cfg.JoinSecret) == 0 {
		return nil
	}
	join, err := place.NewJoin(cfg.JoinSecret)
	t.join = join
	return err
}

// warnInsecure warns of the settings that give places away.
func warnInsecure(cfg config.Config, log *slog.Logger) {
	if cfg.InsecureUserIDs {
		log.Warn("WAITROOM_INSECURE_USER_IDS=true: anyone who names a user id owns its place; never use this in production")
	}
	if !cfg.CookieSecure {
		log.Warn("WAITROOM_COOKIE_SECURE=false: place cookies travel over plain http; never use this in production")
	}
}
