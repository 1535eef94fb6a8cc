package gate

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/waitroom/waitroom/internal/trust/pass"
	"golang.org/x/time/rate"
)

// The remote check: a site's gate verifying passes against a waitroom's
// JWKS and, with VerifyURL, its revocation check.

// newRemoteChecker checks passes against a waitroom's JWKS (and, when
// set, its verify endpoint), through a pass.Cache.
func newRemoteChecker(ctx context.Context, opts Options) (Checker, error) {
	if opts.Issuer == "" || opts.JWKSURL == "" {
		return nil, errors.New("gate: Issuer and JWKSURL are required (or a Checker)")
	}
	client := opts.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	kf, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{opts.JWKSURL}, keyfunc.Override{
		Client: client,
		// The waitroom publishes a key at least 5 minutes before it signs
		// (its JWKS max-age), so a refresh every 5 minutes sees it in
		// time; an unknown kid refreshes at once, at most every 30 s, so a
		// flood of forged kids cannot hammer the waitroom.
		RefreshInterval:   5 * time.Minute,
		RefreshUnknownKID: rate.NewLimiter(rate.Every(30*time.Second), 1),
		RateLimitWaitMax:  time.Second,
		HTTPTimeout:       5 * time.Second,
	})
	if err != nil {
		return nil, fmt.Errorf("gate: JWKS: %w", err)
	}
	var current pass.CurrentFunc
	recheck := opts.RecheckInterval
	if opts.VerifyURL != "" {
		if recheck <= 0 {
			recheck = 2 * time.Second
		}
		current = verifyFunc(client, opts.VerifyURL)
	}
	var cacheOpts []pass.CacheOption
	if opts.passClock != nil {
		cacheOpts = append(cacheOpts, pass.WithClock(opts.passClock))
	}
	cache, err := pass.NewCache(pass.NewVerifier(opts.Issuer, kf.Keyfunc), current, recheck, MaxCachedPasses, cacheOpts...)
	if err != nil {
		return nil, err
	}
	return cacheChecker{cache}, nil
}

// verifyFunc asks a waitroom's /api/v1/verify whether a pass is still
// current for its own queue (the gate then compares that queue with the
// room's): 200 yes, 401 no, anything else: cannot tell.
func verifyFunc(client *http.Client, verifyURL string) pass.CurrentFunc {
	sep := "?"
	if strings.Contains(verifyURL, "?") {
		sep = "&"
	}
	return func(ctx context.Context, token string, c pass.Claims) (bool, error) {
		u := verifyURL + sep + "queue=" + url.QueryEscape(c.Queue)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return false, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			return false, fmt.Errorf("gate: verify: %w", err)
		}
		defer resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			return true, nil
		case http.StatusUnauthorized:
			return false, nil
		default:
			return false, fmt.Errorf("gate: verify answered %s", resp.Status)
		}
	}
}

// cacheChecker is the remote check's Checker over a pass cache: invalid,
// expired and revoked passes are ok = false; only a failed revocation
// check is an error.
type cacheChecker struct{ cache *pass.Cache }

func (c cacheChecker) Check(ctx context.Context, token string) (Claims, bool, error) {
	pc, err := c.cache.Check(ctx, token)
	if err != nil {
		if errors.Is(err, pass.ErrInvalid) {
			return Claims{}, false, nil
		}
		return Claims{}, false, err
	}
	return Claims{Queue: pc.Queue, Subject: pc.Subject, ID: pc.ID, Expires: pc.Expires}, true, nil
}

// CheckOffline checks a pass against the JWKS keys already fetched (an
// unknown kid may still fetch them, at most every 30 s and 1 s long),
// without asking VerifyURL.
func (c cacheChecker) CheckOffline(token string) (Claims, bool) {
	pc, err := c.cache.Offline(token)
	if err != nil {
		return Claims{}, false
	}
	return Claims{Queue: pc.Queue, Subject: pc.Subject, ID: pc.ID, Expires: pc.Expires}, true
}
