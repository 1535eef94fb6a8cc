package oidctest

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// maxFormBytes bounds a token request body.
const maxFormBytes = 64 << 10

// routes is the provider's whole HTTP surface.
func (p *Provider) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", p.handleDiscovery)
	mux.HandleFunc("GET /jwks", p.handleJWKS)
	mux.HandleFunc("GET /authorize", p.handleAuthorize)
	mux.HandleFunc("POST /token", p.handleToken)
	mux.HandleFunc("GET /userinfo", p.handleUserInfo)
	mux.HandleFunc("POST /userinfo", p.handleUserInfo)
	return mux
}

// discovery is the OpenID Provider Metadata document.
type discovery struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	JWKSURI                           string   `json:"jwks_uri"`
	UserinfoEndpoint                  string   `json:"userinfo_endpoint"`
	ResponseTypesSupported            []string `json:"response_types_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	SubjectTypesSupported             []string `json:"subject_types_supported"`
	IDTokenSigningAlgValuesSupported  []string `json:"id_token_signing_alg_values_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	ScopesSupported                   []string `json:"scopes_supported"`
	ClaimsSupported                   []string `json:"claims_supported"`
}

func (p *Provider) handleDiscovery(w http.ResponseWriter, _ *http.Request) {
	iss := p.Issuer()
	writeJSON(w, http.StatusOK, discovery{
		Issuer:                            iss,
		AuthorizationEndpoint:             iss + "/authorize",
		TokenEndpoint:                     iss + "/token",
		JWKSURI:                           iss + "/jwks",
		UserinfoEndpoint:                  iss + "/userinfo",
		ResponseTypesSupported:            []string{"code"},
		GrantTypesSupported:               []string{"authorization_code"},
		SubjectTypesSupported:             []string{"public"},
		IDTokenSigningAlgValuesSupported:  []string{"RS256"},
		CodeChallengeMethodsSupported:     []string{"S256"},
		TokenEndpointAuthMethodsSupported: []string{"client_secret_basic", "client_secret_post"},
		ScopesSupported:                   []string{"openid", "email", "profile", "groups"},
		ClaimsSupported: []string{
			"iss", "sub", "aud", "exp", "iat", "nonce", "at_hash",
			"email", "email_verified", "name", "groups",
		},
	})
}

func (p *Provider) handleJWKS(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, p.key.jwks())
}

// handleAuthorize answers a valid request with a 302 to the redirect_uri
// carrying code and state, and anything else with a 400 naming the problem.
func (p *Provider) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	target, err := p.authorize(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, target, http.StatusFound)
}

func (p *Provider) handleToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		writeTokenError(w, invalidRequest("unreadable form: "+err.Error()))
		return
	}
	resp, terr := p.exchange(credentialsOf(r), r.PostForm)
	if terr != nil {
		writeTokenError(w, terr)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, resp)
}

// credentialsOf reads both client authentication methods from a token
// request. Basic credentials are form-encoded first (RFC 6749 2.3.1).
func credentialsOf(r *http.Request) clientCredentials {
	c := clientCredentials{
		formID:     r.PostForm.Get("client_id"),
		formSecret: r.PostForm.Get("client_secret"),
	}
	user, pass, ok := r.BasicAuth()
	if !ok {
		if r.Header.Get("Authorization") != "" {
			c.basic, c.basicMalformed = true, true
		}
		return c
	}
	c.basic = true
	var errID, errSecret error
	c.basicID, errID = url.QueryUnescape(user)
	c.basicSecret, errSecret = url.QueryUnescape(pass)
	c.basicMalformed = errID != nil || errSecret != nil
	return c
}

func (p *Provider) handleUserInfo(w http.ResponseWriter, r *http.Request) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="oidctest"`)
		http.Error(w, "missing bearer token", http.StatusUnauthorized)
		return
	}
	claims, err := p.userInfo(token)
	if err != nil {
		w.Header().Set("WWW-Authenticate", `Bearer realm="oidctest", error="invalid_token"`)
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	}
	writeJSON(w, http.StatusOK, claims)
}

func writeTokenError(w http.ResponseWriter, e *tokenError) {
	if e.status == http.StatusUnauthorized && e.basicAuth {
		w.Header().Set("WWW-Authenticate", `Basic realm="oidctest"`)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, e.status, struct {
		Error            string `json:"error"`
		ErrorDescription string `json:"error_description,omitempty"`
	}{e.code, e.description})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
